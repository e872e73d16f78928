//! Planning requests: nearby byte ranges of one object merge into spans,
//! each read with one request.
//!
//! Object stores charge a round trip per request, but requests run
//! concurrently: one more request costs a round trip only when the read
//! already has more requests than can be in flight at once. So ranges at
//! most [`FREE_GAP`] apart always merge (the gap costs less than a request's
//! own overhead), and wider gaps, up to the caller's limit, are read only
//! while the read has more requests than its slots in flight, the
//! narrowest first ([`plan_all`]). Spans stop growing at a size cap so a
//! large read still becomes several requests that run concurrently.

use std::ops::Range;

/// Where a wanted range lies in the planned spans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Place {
    /// Index of the span holding the range.
    pub(crate) span: usize,
    /// Offset of the range's first byte inside that span.
    pub(crate) offset: u64,
}

/// Spans to request and where each wanted range lies in them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Byte ranges to request, in ascending order.
    pub(crate) spans: Vec<Range<u64>>,
    /// One place per wanted range, in the order the ranges were given.
    pub(crate) places: Vec<Place>,
}

/// Ranges of one object at most this many bytes apart are always read with
/// one request (64 KiB: less than a millisecond of transfer, cheaper than a
/// request's own overhead).
pub(crate) const FREE_GAP: u64 = 64 << 10;

/// Plans the requests of a read of several objects (`objects[i]`: the
/// wanted ranges of object `i`), one [`Plan`] per object. Ranges at most
/// [`FREE_GAP`] apart merge; then, while the read has more than
/// `most_requests` spans (more than can be in flight at once, so each
/// extra span costs a round trip), the narrowest gaps up to `gap` bytes are
/// read too: the smallest merge limit that brings the spans down to
/// `most_requests`, else `gap`. A gap that saves no round trip is not read.
pub(crate) fn plan_all(
    objects: &[Vec<Range<u64>>],
    gap: u64,
    max_span: u64,
    most_requests: usize,
) -> Vec<Plan> {
    let plan_with = |limit: u64| -> Vec<Plan> {
        objects
            .iter()
            .map(|ranges| plan(ranges, limit, max_span))
            .collect()
    };
    let spans = |plans: &[Plan]| plans.iter().map(|p| p.spans.len()).sum::<usize>();
    let free = FREE_GAP.min(gap);
    let plans = plan_with(free);
    if spans(&plans) <= most_requests || gap <= free {
        return plans;
    }
    // The merge limits worth trying: the gaps left between spans.
    let mut limits: Vec<u64> = plans
        .iter()
        .flat_map(|p| p.spans.windows(2).map(|w| w[1].start - w[0].end))
        .filter(|&g| g > free && g <= gap)
        .collect();
    limits.sort_unstable();
    limits.dedup();
    let Some(&widest) = limits.last() else {
        return plans;
    };
    let enough = limits.partition_point(|&limit| spans(&plan_with(limit)) > most_requests);
    plan_with(limits.get(enough).copied().unwrap_or(widest))
}

/// Merges `ranges` (any order, overlaps allowed) into spans: a range joins
/// the current span when the gap before it is at most `gap` bytes and the
/// span stays within `max_span` bytes (a longer range is a span of its own).
pub(crate) fn plan(ranges: &[Range<u64>], gap: u64, max_span: u64) -> Plan {
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

    /// Bytes of a tile: gaps of a tile or more are wider than [`FREE_GAP`].
    const T: u64 = 100_000;

    /// `n` objects of four tiles, the first and the last wanted.
    fn objects(n: usize) -> Vec<Vec<Range<u64>>> {
        vec![vec![0..T, 3 * T..4 * T]; n]
    }

    #[test]
    fn gaps_are_not_read_while_every_request_fits_in_flight() {
        let plans = plan_all(&objects(3), 1 << 20, 1 << 23, 6);
        assert!(plans.iter().all(|p| p.spans == vec![0..T, 3 * T..4 * T]));
    }

    #[test]
    fn gaps_are_read_when_requests_exceed_the_slots_in_flight() {
        let plans = plan_all(&objects(3), 1 << 20, 1 << 23, 5);
        assert!(plans
            .iter()
            .all(|p| p.spans.len() == 1 && p.spans[0] == (0..4 * T)));
        assert_eq!(
            plans[0].places[1],
            Place {
                span: 0,
                offset: 3 * T
            }
        );
    }

    #[test]
    fn only_the_narrowest_gaps_needed_are_read() {
        // Object 0's gap is two tiles, object 1's one: merging object 1
        // alone brings four spans down to the three slots.
        let objects = vec![vec![0..T, 3 * T..4 * T], vec![0..T, 2 * T..3 * T]];
        let plans = plan_all(&objects, 1 << 20, 1 << 23, 3);
        assert_eq!(plans[0].spans, vec![0..T, 3 * T..4 * T]);
        assert_eq!(plans[1].spans.len(), 1);
        assert_eq!(plans[1].spans[0], 0..3 * T);
    }

    #[test]
    fn gaps_wider_than_the_limit_are_never_read() {
        let plans = plan_all(&objects(3), T, 1 << 23, 1);
        assert!(plans.iter().all(|p| p.spans.len() == 2));
    }

    #[test]
    fn small_gaps_always_merge() {
        let objects = vec![vec![0..100, 100..200, (200 + FREE_GAP)..(300 + FREE_GAP)]];
        let plans = plan_all(&objects, 1 << 20, 1 << 23, 64);
        assert_eq!(plans[0].spans.len(), 1);
        assert_eq!(plans[0].spans[0], 0..(300 + FREE_GAP));
    }

    #[test]
    fn empty_input_plans_nothing() {
        assert_eq!(plan(&[], 10, 100).spans, Vec::<Range<u64>>::new());
    }
}
