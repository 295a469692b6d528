//! `--vit-batch`: a whole number ≥ 1, or `max`, the largest batch whose
//! compile fits the chip (found by compiling: the memory estimator and
//! placement decide, nothing is guessed). A batch that does not fit is a
//! memory rejection whose message names the largest batch that does.

use anyhow::Result;

/// `--vit-batch` as given: a number of images, or `max`, which only the
/// compiling commands resolve (by searching, [`largest_fitting`]) before
/// any input or model is sized from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchFlag {
    /// This many images (≥ 1 is checked with the other flags, so `0`
    /// gets the model's own message).
    Images(usize),
    /// `max`: the largest batch that fits.
    Largest,
}

impl BatchFlag {
    /// The number of images, when one was given.
    pub fn images(self) -> Option<usize> {
        match self {
            BatchFlag::Images(n) => Some(n),
            BatchFlag::Largest => None,
        }
    }
}

/// Largest batch the search tries (far past any model: a tile holds
/// 624 KiB, so even the smallest preset's activations stop fitting long
/// before).
pub const SEARCH_LIMIT: usize = 4096;

/// Parses `--vit-batch`: `max` or a whole number.
pub fn parse(s: &str) -> Result<BatchFlag, String> {
    if s.eq_ignore_ascii_case("max") {
        return Ok(BatchFlag::Largest);
    }
    s.parse::<usize>()
        .map(BatchFlag::Images)
        .map_err(|e| format!("`{s}` is neither a whole number of images nor `max` ({e})"))
}

/// Whether a compile error is a memory rejection (exit status 3).
pub fn does_not_fit(err: &anyhow::Error) -> bool {
    crate::exit::code_of(err) == crate::exit::DOES_NOT_FIT
}

/// The largest batch in `1..=limit` for which `fits` holds, assuming
/// it holds up to some batch and not past it: doubling, then bisection.
/// `None` when not even batch 1 fits. `fits` errors other than "does not
/// fit" end the search.
pub fn largest_fitting(
    limit: usize,
    fits: &mut dyn FnMut(usize) -> Result<bool>,
) -> Result<Option<usize>> {
    if limit == 0 {
        return Ok(None);
    }
    if limit < SEARCH_LIMIT {
        // Bounded (a batch past `limit` is known not to fit): bisect the
        // whole range, about log2(limit) compiles.
        let (mut good, mut bad) = (0usize, limit + 1);
        while bad - good > 1 {
            let mid = good + (bad - good) / 2;
            if fits(mid)? {
                good = mid;
            } else {
                bad = mid;
            }
        }
        return Ok((good > 0).then_some(good));
    }
    let limit = SEARCH_LIMIT;
    if !fits(1)? {
        return Ok(None);
    }
    // `good` fits; `bad` (when known) does not.
    let (mut good, mut bad) = (1usize, None);
    while bad.is_none() && good < limit {
        let next = (good * 2).min(limit);
        if fits(next)? {
            good = next;
        } else {
            bad = Some(next);
        }
    }
    if let Some(mut bad) = bad {
        while bad - good > 1 {
            let mid = good + (bad - good) / 2;
            if fits(mid)? {
                good = mid;
            } else {
                bad = mid;
            }
        }
    }
    Ok(Some(good))
}

/// How many batches just below a rejected one are tried in turn before
/// the rest is bisected: fitting need not be monotone in the batch
/// (ViT-B/16 fits at 60 and not at 53), so a bisection alone can name a
/// batch far below one that fits.
const NEAR_PROBES: usize = 3;

/// The note on a rejected `batch` (> 1): the largest batch below it for
/// which `fits` holds, said as exactly as the search knows it — the
/// [`NEAR_PROBES`] batches below in turn, then a bisection of the rest.
pub fn rejection_note(batch: usize, fits: &mut dyn FnMut(usize) -> Result<bool>) -> Result<String> {
    let floor = batch.saturating_sub(NEAR_PROBES).max(1);
    for b in (floor..batch).rev() {
        if fits(b)? {
            return Ok(format!(
                "--vit-batch {batch} does not fit; the largest batch that fits is {b}"
            ));
        }
    }
    let tried = if floor + 1 < batch {
        format!("{floor} to {}", batch - 1)
    } else {
        floor.to_string()
    };
    Ok(match largest_fitting(floor - 1, fits)? {
        Some(k) => format!(
            "--vit-batch {batch} does not fit, nor does {tried}; a bisection below finds that {k} fits and {} does not (fitting need not be monotone in the batch)",
            k + 1
        ),
        None => format!("--vit-batch {batch} does not fit, nor does batch 1"),
    })
}

/// Runs `probe` (a compile at a batch) with the report quiet, and says
/// what it found: `Ok(true)` fits, `Ok(false)` a memory rejection.
pub fn quiet_probe(batch: usize, probe: &mut dyn FnMut(usize) -> Result<()>) -> Result<bool> {
    let level = crate::output::verbosity();
    crate::output::set_verbosity(crate::output::Verbosity::Quiet);
    let result = probe(batch);
    crate::output::set_verbosity(level);
    match result {
        Ok(()) => {
            crate::say!("batch search: batch {batch} fits");
            Ok(true)
        }
        Err(err) if does_not_fit(&err) => {
            crate::say!("batch search: batch {batch} does not fit");
            Ok(false)
        }
        Err(err) => Err(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `rejection_note` with a fitting rule, and the batches it compiled.
    fn note(batch: usize, fit: impl Fn(usize) -> bool) -> (String, Vec<usize>) {
        let mut probed = Vec::new();
        let text = rejection_note(batch, &mut |b| {
            probed.push(b);
            Ok(fit(b))
        })
        .unwrap();
        (text, probed)
    }

    #[test]
    fn a_batch_just_below_that_fits_is_named_exactly() {
        let (text, probed) = note(61, |b| b <= 52 || b == 56 || b == 60);
        assert_eq!(
            text,
            "--vit-batch 61 does not fit; the largest batch that fits is 60"
        );
        assert_eq!(probed, [60]);
        let (text, probed) = note(6, |b| b <= 4);
        assert!(text.ends_with("the largest batch that fits is 4"), "{text}");
        assert_eq!(probed, [5, 4]);
    }

    #[test]
    fn past_the_near_batches_the_note_says_what_the_bisection_knows() {
        // 30 fits, 31 to 60 do not, yet 20 does not either: the bisection
        // below 58 reports the boundary it finds and says so.
        let (text, _) = note(61, |b| b <= 30 && b != 20);
        assert_eq!(
            text,
            "--vit-batch 61 does not fit, nor does 58 to 60; a bisection below finds that 30 fits and 31 does not (fitting need not be monotone in the batch)"
        );
    }

    #[test]
    fn when_nothing_fits_the_note_says_so() {
        let (text, probed) = note(3, |_| false);
        assert_eq!(text, "--vit-batch 3 does not fit, nor does batch 1");
        assert_eq!(probed, [2, 1]);
        let (text, _) = note(40, |_| false);
        assert_eq!(text, "--vit-batch 40 does not fit, nor does batch 1");
    }

    #[test]
    fn other_errors_end_the_search() {
        let err = rejection_note(10, &mut |_| -> Result<bool> { anyhow::bail!("disk full") })
            .unwrap_err();
        assert_eq!(err.to_string(), "disk full");
    }
}
