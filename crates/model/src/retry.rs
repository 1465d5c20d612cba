//! Retries: exponential backoff with jitter, the server's `Retry-After`,
//! and the budget (a number of retries within a total time).

use std::time::{Duration, Instant};

use reqwest::header::HeaderMap;

const BACKOFF_BASE: Duration = Duration::from_millis(500);
const BACKOFF_CAP: Duration = Duration::from_secs(20);

/// Why no retry follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GiveUp {
    /// `max_retries` retries were made.
    NoRetriesLeft,
    /// The wait would end past the total retry time.
    PastRetryTime,
}

/// The retries of one call: how many are left and until when they may wait.
#[derive(Debug)]
pub(crate) struct Retries {
    start: Instant,
    made: u32,
    max: u32,
    max_time: Duration,
}

impl Retries {
    /// A budget of `max` retries, none waiting past `max_time` from now.
    pub(crate) fn new(max: u32, max_time: Duration) -> Self {
        Retries {
            start: Instant::now(),
            made: 0,
            max,
            max_time,
        }
    }

    /// Time since the first request.
    pub(crate) fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    /// The wait before the next retry (the server's `retry_after`, else
    /// backoff), counting it as made; or why there is none.
    pub(crate) fn next(&mut self, retry_after: Option<Duration>) -> Result<Duration, GiveUp> {
        if self.made >= self.max {
            return Err(GiveUp::NoRetriesLeft);
        }
        let delay = retry_after.unwrap_or_else(|| backoff(self.made));
        if self.start.elapsed() + delay > self.max_time {
            return Err(GiveUp::PastRetryTime);
        }
        self.made += 1;
        Ok(delay)
    }
}

/// Full-jitter-ish exponential backoff: `base·2^n`, capped, times 0.5–1.0.
fn backoff(retry: u32) -> Duration {
    let exp = BACKOFF_BASE.saturating_mul(1u32 << retry.min(10));
    let capped = exp.min(BACKOFF_CAP);
    capped.mul_f64(rand::random_range(0.5..=1.0))
}

/// Reads `retry-after-ms`, then `retry-after` (seconds or an HTTP date).
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v >= 0.0)
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let v = headers.get("retry-after")?.to_str().ok()?.trim();
    parse_retry_after(v, chrono::Utc::now())
}

/// Parses a `Retry-After` value: delay seconds or an HTTP date (relative to `now`).
fn parse_retry_after(v: &str, now: chrono::DateTime<chrono::Utc>) -> Option<Duration> {
    if let Ok(secs) = v.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(1e6)));
    }
    let when = chrono::DateTime::parse_from_rfc2822(v).ok()?;
    let delta = when.with_timezone(&chrono::Utc) - now;
    Some(delta.to_std().unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_and_http_dates() {
        let now = chrono::DateTime::parse_from_rfc2822("Wed, 21 Oct 2015 07:28:00 GMT")
            .unwrap()
            .with_timezone(&chrono::Utc);
        assert_eq!(parse_retry_after("1", now), Some(Duration::from_secs(1)));
        assert_eq!(
            parse_retry_after("0.5", now),
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:07 GMT", now),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:27:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-3", now), None);
    }

    #[test]
    fn backoff_grows_and_is_capped_with_jitter() {
        for _ in 0..20 {
            let d0 = backoff(0);
            assert!(d0 >= Duration::from_millis(250) && d0 <= Duration::from_millis(500));
            let d3 = backoff(3);
            assert!(d3 >= Duration::from_secs(2) && d3 <= Duration::from_secs(4));
            assert!(backoff(30) <= BACKOFF_CAP);
        }
    }

    #[test]
    fn the_budget_counts_retries_and_time() {
        let mut r = Retries::new(2, Duration::from_secs(60));
        assert_eq!(r.next(Some(Duration::ZERO)), Ok(Duration::ZERO));
        assert!(r.next(None).is_ok());
        assert_eq!(r.next(None), Err(GiveUp::NoRetriesLeft));
        let mut r = Retries::new(5, Duration::from_secs(10));
        assert_eq!(
            r.next(Some(Duration::from_secs(300))),
            Err(GiveUp::PastRetryTime)
        );
    }
}
