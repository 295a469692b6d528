//! Collects samples as a simulator (or device) reports them and produces a
//! [`Profile`]: steps are identified by the package's step id and the Repeat
//! iteration, ordered by when they first start.

use std::collections::BTreeMap;

use ipuc_core::package::{StepInfo, StepTables};

use super::profile::{CycleSample, Profile, ProfileStep, StepKind, TileSamples};

/// Which step a sample belongs to.
#[derive(Clone, Copy, Debug)]
pub struct StepKey<'a> {
    /// The package's step id ([`StepInfo::step`]).
    pub step_id: u32,
    pub kind: StepKind,
    pub operation: &'a str,
    /// Repeat iteration for steps in a Repeat body.
    pub iteration: Option<u32>,
}

/// Builds a [`Profile`] from individual samples.
pub struct ProfileBuilder {
    title: String,
    simulated: bool,
    clock_hz: u64,
    /// (step id, iteration) → descriptor index.
    index: BTreeMap<(u32, Option<u32>), u32>,
    steps: Vec<ProfileStep>,
    first_start: Vec<u64>,
    tiles: BTreeMap<u32, Vec<CycleSample>>,
}

impl ProfileBuilder {
    pub fn new(title: impl Into<String>, simulated: bool, clock_hz: u64) -> Self {
        ProfileBuilder {
            title: title.into(),
            simulated,
            clock_hz,
            index: BTreeMap::new(),
            steps: Vec::new(),
            first_start: Vec::new(),
            tiles: BTreeMap::new(),
        }
    }

    /// Records that `tile` ran `step` from `start_cycle` to `end_cycle`. The
    /// first sample of a (step id, iteration) fixes its kind and operation.
    pub fn sample(&mut self, tile: u32, step: StepKey<'_>, start_cycle: u64, end_cycle: u64) {
        let next = self.steps.len() as u32;
        let index = *self
            .index
            .entry((step.step_id, step.iteration))
            .or_insert(next);
        if index == next {
            self.steps.push(ProfileStep {
                kind: step.kind,
                operation: step.operation.to_string(),
                iteration: step.iteration,
            });
            self.first_start.push(start_cycle);
        }
        let first = &mut self.first_start[index as usize];
        *first = (*first).min(start_cycle);
        self.tiles.entry(tile).or_default().push(CycleSample {
            step: index,
            start_cycle,
            end_cycle,
        });
    }

    /// [`ProfileBuilder::sample`] for a step of a package's step table.
    pub fn package_step(
        &mut self,
        tables: &StepTables,
        tile: u32,
        info: &StepInfo,
        iteration: Option<u32>,
        start_cycle: u64,
        end_cycle: u64,
    ) {
        let operation = tables
            .operations
            .get(info.operation as usize)
            .map_or("?", String::as_str);
        let key = StepKey {
            step_id: info.step,
            kind: info.kind,
            operation,
            iteration,
        };
        self.sample(tile, key, start_cycle, end_cycle);
    }

    /// The profile: steps in order of first start, each tile's samples by start.
    pub fn finish(self) -> Profile {
        let mut order: Vec<u32> = (0..self.steps.len() as u32).collect();
        order.sort_by_key(|&i| (self.first_start[i as usize], i));
        let mut remap = vec![0u32; order.len()];
        for (new, &old) in order.iter().enumerate() {
            remap[old as usize] = new as u32;
        }
        let steps = order
            .iter()
            .map(|&i| self.steps[i as usize].clone())
            .collect();
        let tiles = self
            .tiles
            .into_iter()
            .map(|(tile, mut samples)| {
                for s in &mut samples {
                    s.step = remap[s.step as usize];
                }
                samples.sort_by_key(|s| (s.start_cycle, s.end_cycle, s.step));
                TileSamples { tile, samples }
            })
            .collect();
        Profile {
            title: self.title,
            simulated: self.simulated,
            clock_hz: self.clock_hz,
            steps,
            tiles,
            kernels: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_keyed_by_id_and_iteration_and_ordered_by_start() {
        let mut b = ProfileBuilder::new("t", true, 1_500_000_000);
        let key = |step_id, kind, iteration| StepKey {
            step_id,
            kind,
            operation: "qkv",
            iteration,
        };
        // Reported out of order, as parallel tiles might.
        b.sample(2, key(5, StepKind::Exchange, Some(1)), 300, 350);
        b.sample(0, key(5, StepKind::Exchange, Some(0)), 100, 150);
        b.sample(0, key(4, StepKind::Compute, Some(0)), 0, 100);
        b.sample(2, key(5, StepKind::Exchange, Some(0)), 100, 160);
        b.sample(0, key(5, StepKind::Exchange, Some(1)), 300, 340);
        let p = b.finish();
        p.validate().unwrap();
        let described: Vec<_> = p.steps.iter().map(|s| (s.kind, s.iteration)).collect();
        assert_eq!(
            described,
            vec![
                (StepKind::Compute, Some(0)),
                (StepKind::Exchange, Some(0)),
                (StepKind::Exchange, Some(1))
            ]
        );
        assert_eq!(p.tiles[0].tile, 0);
        assert_eq!(
            p.tiles[0]
                .samples
                .iter()
                .map(|s| s.step)
                .collect::<Vec<_>>(),
            vec![0, 1, 2]
        );
        assert_eq!(
            p.tiles[1]
                .samples
                .iter()
                .map(|s| s.step)
                .collect::<Vec<_>>(),
            vec![1, 2]
        );
        assert_eq!(p.iteration_spans().len(), 2);
    }
}
