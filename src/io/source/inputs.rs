//! The sources `chunkref index` is given, made a list of files: a remote
//! URL whose key holds glob characters (`s3://bucket/sst/2021/*.tif`) is
//! the objects under the key's fixed prefix that match it, listed from the
//! store; a list file (`--from-list urls.txt`, `-` for standard input)
//! gives one source per line.

use std::io::Read;

use glob::{MatchOptions, Pattern};

use super::locate;
use crate::base::error::{Error, Result};
use crate::io::resolve::{Location, ObjectUrl, Scheme};

/// Characters that make a key a glob pattern.
const GLOB_CHARS: [char; 3] = ['*', '?', '['];

/// `*` and `?` stop at `/` (`**` crosses directories), as in a shell.
const MATCHING: MatchOptions = MatchOptions {
    case_sensitive: true,
    require_literal_separator: true,
    require_literal_leading_dot: false,
};

/// The files `name` stands for: itself, or, for a remote URL with a glob
/// pattern in its key, the matching objects (as `scheme://bucket/key`
/// URLs, sorted). A pattern matching nothing is an error naming it.
pub fn expand(name: &str) -> Result<Vec<String>> {
    let Location::Object(url) = locate(name)? else {
        return Ok(vec![name.to_string()]);
    };
    let Some(wild) = url.key.find(GLOB_CHARS) else {
        return Ok(vec![name.to_string()]);
    };
    let bad = |reason: String| Error::Usage {
        what: format!("{name}: {reason}"),
    };
    if matches!(url.scheme, Scheme::Http | Scheme::Https) {
        return Err(bad(
            "an HTTP server cannot be listed; give the URLs, or a list of them with --from-list"
                .into(),
        ));
    }
    let pattern = Pattern::new(&url.key).map_err(|e| bad(format!("bad pattern: {e}")))?;
    let prefix = url.key[..wild].rsplit_once('/').map_or("", |(dir, _)| dir);
    let listing = ObjectUrl {
        key: prefix.to_string(),
        ..url.clone()
    };
    let mut found: Vec<String> = super::list(&listing)?
        .into_iter()
        .filter(|(key, _)| pattern.matches_with(key, MATCHING))
        .map(|(key, _)| ObjectUrl { key, ..url.clone() }.to_string())
        .collect();
    if found.is_empty() {
        return Err(bad("no object matches".into()));
    }
    found.sort();
    Ok(found)
}

/// The sources listed in the text file `path` (`-`: standard input), one
/// per line; blank lines and lines starting with `#` are skipped.
pub fn read_list(path: &str) -> Result<Vec<String>> {
    let mut text = String::new();
    let read = if path == "-" {
        std::io::stdin().read_to_string(&mut text)
    } else {
        std::fs::File::open(path).and_then(|mut f| f.read_to_string(&mut text))
    };
    read.map_err(|e| Error::Io {
        url: path.to_string(),
        range: String::new(),
        reason: e.to_string(),
    })?;
    Ok(parse_list(&text))
}

/// The sources of a list file's text.
fn parse_list(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(String::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_skip_blanks_and_comments() {
        let text = "s3://b/a.tif\n\n# a comment\n  /data/b.tif  \n";
        assert_eq!(parse_list(text), vec!["s3://b/a.tif", "/data/b.tif"]);
    }

    #[test]
    fn names_without_patterns_stand_for_themselves() {
        assert_eq!(expand("/data/x*.tif").unwrap(), vec!["/data/x*.tif"]);
        assert_eq!(expand("s3://b/k/x.tif").unwrap(), vec!["s3://b/k/x.tif"]);
        let http = expand("https://example.com/d/*.tif")
            .unwrap_err()
            .to_string();
        assert!(http.contains("cannot be listed"), "{http}");
    }

    #[test]
    fn stars_stop_at_slashes() {
        let p = Pattern::new("sst/2021/*.tif").unwrap();
        assert!(p.matches_with("sst/2021/a.tif", MATCHING));
        assert!(!p.matches_with("sst/2021/x/a.tif", MATCHING));
        let deep = Pattern::new("sst/**/*.tif").unwrap();
        assert!(deep.matches_with("sst/2021/x/a.tif", MATCHING));
    }
}
