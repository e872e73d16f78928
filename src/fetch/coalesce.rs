//! Planning requests: nearby byte ranges of one object merge into spans,
//! each read with one request.
//!
//! Object stores charge a round trip per request; reading a few unwanted
//! bytes between two wanted ranges costs less than a second request. Spans
//! stop growing at a size cap so a large read still becomes several requests
//! that run concurrently.

use std::ops::Range;

/// Where a wanted range lies in the planned spans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Place {
    /// Index of the span holding the range.
    pub(super) span: usize,
    /// Offset of the range's first byte inside that span.
    pub(super) offset: u64,
}

/// Spans to request and where each wanted range lies in them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Plan {
    /// Byte ranges to request, in ascending order.
    pub(super) spans: Vec<Range<u64>>,
    /// One place per wanted range, in the order the ranges were given.
    pub(super) places: Vec<Place>,
}

/// Merges `ranges` (any order, overlaps allowed) into spans: a range joins
/// the current span when the gap before it is at most `gap` bytes and the
/// span stays within `max_span` bytes (a longer range is a span of its own).
pub(super) fn plan(ranges: &[Range<u64>], gap: u64, max_span: u64) -> Plan {
    let mut order: Vec<usize> = (0..ranges.len()).collect();
    order.sort_by_key(|&i| (ranges[i].start, ranges[i].end));
    let mut spans: Vec<Range<u64>> = Vec::new();
    let mut places = vec![Place { span: 0, offset: 0 }; ranges.len()];
    for i in order {
        let r = &ranges[i];
        let joins = spans.last().is_some_and(|s| {
            r.start <= s.end.saturating_add(gap) && r.end.max(s.end) - s.start <= max_span
        });
        if !joins {
            spans.push(r.clone());
        }
        let last = spans.len() - 1;
        let span = &mut spans[last];
        span.end = span.end.max(r.end);
        places[i] = Place {
            span: last,
            offset: r.start - span.start,
        };
    }
    Plan { spans, places }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_ranges_within_the_gap() {
        let p = plan(&[20..30, 0..10, 12..15, 100..110], 5, 1000);
        assert_eq!(p.spans, vec![0..30, 100..110]);
        assert_eq!(
            p.places,
            vec![
                Place {
                    span: 0,
                    offset: 20
                },
                Place { span: 0, offset: 0 },
                Place {
                    span: 0,
                    offset: 12
                },
                Place { span: 1, offset: 0 },
            ]
        );
    }

    #[test]
    fn zero_gap_merges_only_touching_or_overlapping_ranges() {
        let p = plan(&[0..10, 10..20, 15..18, 21..22], 0, 1000);
        assert_eq!(p.spans, vec![0..20, 21..22]);
        assert_eq!(
            p.places[2],
            Place {
                span: 0,
                offset: 15
            }
        );
    }

    #[test]
    fn spans_stop_at_the_size_cap() {
        let p = plan(&[0..40, 40..80, 80..120, 120..500], 10, 100);
        assert_eq!(p.spans, vec![0..80, 80..120, 120..500]);
        assert_eq!(p.places[3], Place { span: 2, offset: 0 });
    }

    #[test]
    fn empty_input_plans_nothing() {
        assert_eq!(plan(&[], 10, 100).spans, Vec::<Range<u64>>::new());
    }
}
