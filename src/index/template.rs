//! The small subset of Jinja that Kerchunk references use: `{{ expr }}`
//! placeholders whose expression is a variable or integer arithmetic over
//! variables (`+ - * / // % **`, parentheses, unary minus).

use std::collections::HashMap;

/// A template variable's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplateValue {
    /// An integer (gen dimensions given as ranges or numbers).
    Int(i64),
    /// A string (templates, gen dimensions given as strings).
    Str(String),
}

impl std::fmt::Display for TemplateValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TemplateValue::Int(i) => write!(f, "{i}"),
            TemplateValue::Str(s) => f.write_str(s),
        }
    }
}

/// Variables visible to a template.
pub type Vars = HashMap<String, TemplateValue>;

/// Renders every `{{ expr }}` of `text` with `vars`.
pub fn render(text: &str, vars: &Vars) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find("}}")
            .ok_or_else(|| format!("unclosed '{{{{' in template '{text}'"))?;
        let value =
            evaluate(after[..end].trim(), vars).map_err(|e| format!("template '{text}': {e}"))?;
        out.push_str(&value.to_string());
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Renders a reference URL. When the URL starts with a placeholder (a
/// template base such as `{{base}}`), the text after it may not climb out of
/// that base with `..` segments.
pub fn render_url(url: &str, vars: &Vars) -> Result<String, String> {
    if let Some(after) = url.strip_prefix("{{") {
        if let Some(end) = after.find("}}") {
            let mut depth: i64 = 0;
            let rest = &after[end + 2..];
            let path = rest.split(['?', '#']).next().unwrap_or(rest);
            for seg in path.split('/') {
                match seg {
                    ".." => depth -= 1,
                    "" | "." => {}
                    _ => depth += 1,
                }
                if depth < 0 {
                    return Err(format!(
                        "reference URL '{url}' climbs out of its template base \
                         '{{{{{}}}}}' with '..'; refused",
                        after[..end].trim()
                    ));
                }
            }
        }
    }
    render(url, vars)
}

/// Evaluates one expression.
pub fn evaluate(expr: &str, vars: &Vars) -> Result<TemplateValue, String> {
    let tokens = tokenize(expr)?;
    let mut p = Parser {
        tokens: &tokens,
        pos: 0,
        vars,
    };
    let v = p.expr(0)?;
    if p.pos != tokens.len() {
        return Err(format!(
            "unexpected '{:?}' in expression '{expr}'",
            tokens[p.pos]
        ));
    }
    Ok(v)
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Int(i64),
    Name(String),
    Op(&'static str),
    Open,
    Close,
}

fn tokenize(expr: &str) -> Result<Vec<Token>, String> {
    let b = expr.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            let n = expr[start..i]
                .parse()
                .map_err(|_| format!("integer '{}' too large", &expr[start..i]))?;
            out.push(Token::Int(n));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Token::Name(expr[start..i].to_string()));
        } else {
            let two = expr.get(i..i + 2);
            let op = match (two, c) {
                (Some("//"), _) => "//",
                (Some("**"), _) => "**",
                (_, b'+') => "+",
                (_, b'-') => "-",
                (_, b'*') => "*",
                (_, b'/') => "/",
                (_, b'%') => "%",
                (_, b'(') => {
                    out.push(Token::Open);
                    i += 1;
                    continue;
                }
                (_, b')') => {
                    out.push(Token::Close);
                    i += 1;
                    continue;
                }
                _ => {
                    return Err(format!(
                        "unsupported character '{}' in expression",
                        c as char
                    ))
                }
            };
            i += op.len();
            out.push(Token::Op(op));
        }
    }
    Ok(out)
}

struct Parser<'a> {
    tokens: &'a [Token],
    pos: usize,
    vars: &'a Vars,
}

fn precedence(op: &str) -> (u8, bool) {
    match op {
        "+" | "-" => (1, false),
        "*" | "/" | "//" | "%" => (2, false),
        _ => (3, true), // "**", right associative
    }
}

impl Parser<'_> {
    fn expr(&mut self, min_prec: u8) -> Result<TemplateValue, String> {
        let mut lhs = self.atom()?;
        while let Some(Token::Op(op)) = self.tokens.get(self.pos) {
            let (prec, right) = precedence(op);
            if prec < min_prec {
                break;
            }
            self.pos += 1;
            let rhs = self.expr(if right { prec } else { prec + 1 })?;
            lhs = apply(op, lhs, rhs)?;
        }
        Ok(lhs)
    }

    fn atom(&mut self) -> Result<TemplateValue, String> {
        let tok = self
            .tokens
            .get(self.pos)
            .ok_or("expression ends too early")?;
        self.pos += 1;
        match tok {
            Token::Int(n) => Ok(TemplateValue::Int(*n)),
            Token::Name(n) => self
                .vars
                .get(n)
                .cloned()
                .ok_or_else(|| format!("undefined variable '{n}'")),
            Token::Open => {
                let v = self.expr(0)?;
                match self.tokens.get(self.pos) {
                    Some(Token::Close) => {
                        self.pos += 1;
                        Ok(v)
                    }
                    _ => Err("missing ')'".into()),
                }
            }
            Token::Op("-") => match self.expr(3)? {
                TemplateValue::Int(i) => i
                    .checked_neg()
                    .map(TemplateValue::Int)
                    .ok_or("overflow".into()),
                TemplateValue::Str(s) => Err(format!("cannot negate '{s}'")),
            },
            other => Err(format!("unexpected {other:?}")),
        }
    }
}

fn apply(op: &str, a: TemplateValue, b: TemplateValue) -> Result<TemplateValue, String> {
    use TemplateValue::{Int, Str};
    let (x, y) = match (a, b) {
        (Int(x), Int(y)) => (x, y),
        (Str(x), Str(y)) if op == "+" => return Ok(Str(x + &y)),
        (a, b) => return Err(format!("cannot apply '{op}' to {a} and {b}")),
    };
    let r = match op {
        "+" => x.checked_add(y),
        "-" => x.checked_sub(y),
        "*" => x.checked_mul(y),
        "//" => (y != 0).then(|| x.div_euclid(y)),
        "%" => (y != 0).then(|| x.rem_euclid(y)),
        "/" if y != 0 && x % y == 0 => Some(x / y),
        "/" => return Err(format!("{x} / {y} is not an integer")),
        _ => u32::try_from(y).ok().and_then(|e| x.checked_pow(e)),
    };
    r.map(Int)
        .ok_or_else(|| format!("arithmetic error in {x} {op} {y}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_may_not_climb_out_of_a_template_base() {
        let mut v = Vars::new();
        v.insert("base".into(), TemplateValue::Str("s3://b/d/".into()));
        assert_eq!(
            render_url("{{base}}a/../x.tif", &v).unwrap(),
            "s3://b/d/a/../x.tif"
        );
        assert_eq!(
            render_url("{{ base }}x.tif?p=../..", &v).unwrap(),
            "s3://b/d/x.tif?p=../.."
        );
        for bad in ["{{base}}../x.tif", "{{base}}a/../../x", "{{ base }}./../x"] {
            let e = render_url(bad, &v).unwrap_err();
            assert!(e.contains(bad) && e.contains("{{base}}"), "{e}");
        }
    }

    fn vars() -> Vars {
        let mut v = Vars::new();
        v.insert("i".into(), TemplateValue::Int(4));
        v.insert("u".into(), TemplateValue::Str("a".into()));
        v
    }

    #[test]
    fn renders_kerchunk_examples() {
        let v = vars();
        assert_eq!(render("http://{{u}}_{{i}}", &v).unwrap(), "http://a_4");
        assert_eq!(render("{{(i + 1) * 1000}}", &v).unwrap(), "5000");
        assert_eq!(render("{{ i ** 2 - 3 // 2 }}", &v).unwrap(), "15");
        assert_eq!(render("{{-i % 3}}", &v).unwrap(), "2");
        assert_eq!(render("plain", &v).unwrap(), "plain");
    }

    #[test]
    fn reports_errors() {
        let v = vars();
        assert!(render("{{x}}", &v)
            .unwrap_err()
            .contains("undefined variable 'x'"));
        assert!(render("{{i", &v).is_err());
        assert!(render("{{i | upper}}", &v).is_err());
        assert!(render("{{i / 0}}", &v).is_err());
        assert!(render("{{9223372036854775807 + 1}}", &v).is_err());
    }
}
