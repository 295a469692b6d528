//! #44: what the reader now checks behind the digest — SRAM shared by
//! bindings of any two classes, slices over the program's own segments,
//! and host-call and Repeat counts the program determines. (A description
//! that contradicts its program is `ipuc_core::description`'s to refuse.)

use alloc::string::ToString;

use super::*;

fn binding<'a>(p: &'a mut Package, name: &str) -> &'a mut Binding {
    p.bindings.iter_mut().find(|b| b.name == name).unwrap()
}

/// Each class's binding in the sample, with the address its first slice
/// on tile 0 has.
const CLASSES: [(&str, &str); 3] = [
    ("image", "input"),
    ("w.qkv", "weight"),
    ("embedding", "output"),
];

fn on_tile0(p: &Package, name: &str) -> u32 {
    p.bindings
        .iter()
        .find(|b| b.name == name)
        .unwrap()
        .slices
        .iter()
        .find(|s| s.tile == 0)
        .unwrap()
        .tile_address
}

#[test]
fn every_pair_of_binding_classes_is_refused_on_shared_sram() {
    for (a, kind_a) in CLASSES {
        for (b, kind_b) in CLASSES {
            if a == b {
                continue;
            }
            let mut p = sample();
            let target = on_tile0(&p, b);
            let s = binding(&mut p, a)
                .slices
                .iter_mut()
                .find(|s| s.tile == 0)
                .unwrap();
            s.tile_address = target;
            let e = err(&p);
            let PackageError::SlicesAlias {
                kind, other_kind, ..
            } = e
            else {
                panic!("{a} on {b}: {e}");
            };
            let mut pair = [kind, other_kind];
            pair.sort_unstable();
            let mut want = [kind_a, kind_b];
            want.sort_unstable();
            assert_eq!(pair, want, "{a} on {b}: {e}");
            assert!(e.to_string().contains("shares SRAM"), "{e}");
        }
    }
    // Two weights on one range.
    let mut p = sample();
    let at = on_tile0(&p, "w.qkv");
    p.bindings.push(Binding {
        name: "w.out".to_string(),
        scale: -4,
        kind: BindingKind::Weight,
        dtype: DType::F8E4M3,
        shape: vec![16],
        slices: vec![BindingSlice {
            file_offset: 0,
            tile: 0,
            tile_address: at + 8,
            size: 16,
        }],
    });
    assert!(matches!(
        err(&p),
        PackageError::SlicesAlias {
            kind: "weight",
            other_kind: "weight",
            ..
        }
    ));
}

#[test]
fn a_slice_over_host_descriptors_or_code_is_refused() {
    for address in [HOST, ROWS] {
        let mut p = sample();
        binding(&mut p, "embedding").slices[0].tile_address = address;
        assert!(
            matches!(err(&p), PackageError::SliceOutsideSegment { .. }),
            "{address:#x}: {}",
            err(&p)
        );
    }
}

#[test]
fn host_call_counts_the_program_does_not_run_are_refused() {
    for (phases, invocations) in [(3, 1), (u32::MAX, 1), (2, 2), (2, u32::MAX)] {
        let mut p = sample();
        p.host_calls[0].phases = phases;
        p.host_calls[0].invocations = invocations;
        assert!(
            matches!(err(&p), PackageError::CountMismatch { .. }),
            "{phases} {invocations}: {}",
            err(&p)
        );
    }
}

#[test]
fn huge_or_disagreeing_trip_counts_are_refused() {
    let mut p = sample();
    for t in &mut p.steps.tiles {
        for s in &mut t.steps {
            if let Some(r) = &mut s.repeat {
                r.trip_count = u32::MAX;
            }
        }
    }
    let e = err(&p);
    assert!(
        matches!(e, PackageError::CountTooLarge { value, .. } if value == u64::from(u32::MAX)),
        "{e}"
    );
    let mut p = sample();
    let last = p.steps.tiles.last_mut().unwrap();
    let step = last
        .steps
        .iter_mut()
        .rev()
        .find(|s| s.repeat.is_some())
        .unwrap();
    step.repeat.as_mut().unwrap().trip_count = 3;
    assert!(
        matches!(err(&p), PackageError::CountMismatch { .. }),
        "{}",
        err(&p)
    );
}
