//! `IrError`: every way a graph can be malformed, naming the op and value.

use alloc::string::String;
use core::fmt;

use super::id::{OpId, RegionId, ValueId};
use super::types::{DType, Shape, TensorType};

/// Result alias for IR construction and verification.
pub type IrResult<T> = Result<T, IrError>;

/// Which kind of Repeat body argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RepeatArgKind {
    /// Loop-carried (yield ↔ argument pair).
    Carried,
    /// Invariant outer value.
    Invariant,
    /// One element of an iterated sequence per iteration.
    Iterated,
}

impl fmt::Display for RepeatArgKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RepeatArgKind::Carried => "carried",
            RepeatArgKind::Invariant => "invariant",
            RepeatArgKind::Iterated => "iterated",
        })
    }
}

/// A malformed graph or a builder misuse. `op_name` is the op's mnemonic.
#[derive(Clone, Debug, PartialEq)]
pub enum IrError {
    /// A value id that does not exist.
    UnknownValue { op: Option<OpId>, value: ValueId },
    /// An op id that does not exist.
    UnknownOp { op: OpId },
    /// Builder: a label for a value no op defines (a region argument).
    NotAnOpResult { value: ValueId },
    /// A region id that does not exist.
    UnknownRegion { region: RegionId },
    /// An operand not defined earlier in the op's own region.
    NotVisible {
        op: OpId,
        op_name: &'static str,
        value: ValueId,
        region: RegionId,
    },
    /// Wrong number of operands.
    OperandCount {
        op: OpId,
        op_name: &'static str,
        expected: usize,
        found: usize,
    },
    /// An operand of the wrong rank.
    Rank {
        op: OpId,
        op_name: &'static str,
        value: ValueId,
        expected: usize,
        found: usize,
    },
    /// An operand of too small a rank.
    RankTooSmall {
        op: OpId,
        op_name: &'static str,
        value: ValueId,
        min: usize,
        found: usize,
    },
    /// One dimension of an operand disagrees with what the op needs.
    Dim {
        op: OpId,
        op_name: &'static str,
        value: ValueId,
        axis: usize,
        expected: usize,
        found: usize,
    },
    /// Two operands whose leading/batch dims cannot broadcast.
    NotBroadcastable {
        op: OpId,
        op_name: &'static str,
        lhs: ValueId,
        lhs_shape: Shape,
        rhs: ValueId,
        rhs_shape: Shape,
    },
    /// An operand whose dtype must equal another's.
    DTypeMismatch {
        op: OpId,
        op_name: &'static str,
        value: ValueId,
        expected: DType,
        found: DType,
    },
    /// A dtype the op does not accept (e.g. FP8 in arithmetic).
    UnsupportedDType {
        op: OpId,
        op_name: &'static str,
        value: Option<ValueId>,
        dtype: DType,
        accepts: &'static str,
    },
    /// An FP8 dtype whose scale is outside [−32, 31].
    InvalidDType { value: ValueId, dtype: DType },
    /// An attribute out of range (with the numbers in `reason`).
    InvalidAttribute {
        op: OpId,
        op_name: &'static str,
        reason: String,
    },
    /// Element counts that must match do not (reshape, constant data).
    ElementCount {
        op: OpId,
        op_name: &'static str,
        value: ValueId,
        expected: usize,
        found: usize,
    },
    /// A shape whose element count overflows `usize`.
    ShapeOverflow { value: ValueId, shape: Shape },
    /// A stored result type that differs from the inferred one.
    ResultType {
        op: OpId,
        op_name: &'static str,
        value: ValueId,
        expected: TensorType,
        found: TensorType,
    },
    /// Wrong number of results.
    ResultCount {
        op: OpId,
        op_name: &'static str,
        expected: usize,
        found: usize,
    },
    /// An input or parameter outside the top-level region.
    NotTopLevel { op: OpId, op_name: &'static str },
    /// An empty input, parameter or output name.
    EmptyName { op: Option<OpId> },
    /// Two inputs/parameters with one name.
    DuplicateName { op: OpId, name: String, first: OpId },
    /// Two graph outputs with one name.
    DuplicateOutput { name: String },
    /// A graph output whose value is not defined at top level.
    OutputNotTopLevel { name: String, value: ValueId },
    /// A Repeat with zero iterations.
    RepeatTripCount { op: OpId },
    /// A Repeat whose body region is not owned by it (parent link wrong or shared).
    RepeatBody { op: OpId, region: RegionId },
    /// Operand count ≠ carried + invariants + sequences·trip_count.
    RepeatOperandCount {
        op: OpId,
        expected: usize,
        found: usize,
    },
    /// Body argument count ≠ carried + invariants + sequences.
    RepeatArgumentCount {
        op: OpId,
        region: RegionId,
        expected: usize,
        found: usize,
    },
    /// A body argument typed unlike the outer value feeding it.
    RepeatArgumentType {
        op: OpId,
        kind: RepeatArgKind,
        index: usize,
        argument: ValueId,
        value: ValueId,
        expected: TensorType,
        found: TensorType,
    },
    /// An iterated sequence whose length ≠ trip count (builder).
    RepeatSequenceLength {
        op: Option<OpId>,
        sequence: usize,
        expected: usize,
        found: usize,
    },
    /// A sequence element typed unlike the sequence's body argument.
    RepeatSequenceType {
        op: Option<OpId>,
        sequence: usize,
        iteration: usize,
        value: ValueId,
        expected: TensorType,
        found: TensorType,
    },
    /// Yield count ≠ carried count.
    RepeatYieldCount {
        op: OpId,
        expected: usize,
        found: usize,
    },
    /// Yield j typed unlike carried argument j.
    RepeatYieldType {
        op: OpId,
        index: usize,
        value: ValueId,
        expected: TensorType,
        found: TensorType,
    },
    /// A yield value not defined in the body.
    RepeatYieldNotVisible {
        op: OpId,
        value: ValueId,
        region: RegionId,
    },
    /// Arguments or yields on a region that is not a Repeat body.
    StrayRegionInterface { region: RegionId },
    /// Builder: a Repeat handle that is not the innermost open Repeat.
    RepeatNotInnermost { region: RegionId },
    /// Builder: `finish` with a Repeat still open.
    UnclosedRepeat { region: RegionId },
    /// Builder: a Repeat operand (init, invariant, sequence element) not
    /// defined in the region enclosing the Repeat.
    RepeatOperandNotVisible {
        region: RegionId,
        kind: RepeatArgKind,
        value: ValueId,
    },
}

impl fmt::Display for IrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use IrError::*;
        match self {
            UnknownValue { op: Some(op), value } => write!(f, "{op}: unknown value {value}"),
            UnknownValue { op: None, value } => write!(f, "unknown value {value}"),
            UnknownOp { op } => write!(f, "unknown op {op}"),
            NotAnOpResult { value } => {
                write!(f, "{value} is a region argument, not an op result, and cannot be labelled")
            }
            UnknownRegion { region } => write!(f, "unknown region {region}"),
            NotVisible { op, op_name, value, region } => write!(
                f,
                "{op} ({op_name}): operand {value} is not defined earlier in region {region} \
                 (outer values reach a Repeat body only as invariants)"
            ),
            OperandCount { op, op_name, expected, found } => write!(
                f,
                "{op} ({op_name}): expected {expected} operands, found {found}"
            ),
            Rank { op, op_name, value, expected, found } => write!(
                f,
                "{op} ({op_name}): operand {value} must have rank {expected}, found rank {found}"
            ),
            RankTooSmall { op, op_name, value, min, found } => write!(
                f,
                "{op} ({op_name}): operand {value} must have rank at least {min}, found rank {found}"
            ),
            Dim { op, op_name, value, axis, expected, found } => write!(
                f,
                "{op} ({op_name}): operand {value} dim {axis} must be {expected}, found {found}"
            ),
            NotBroadcastable { op, op_name, lhs, lhs_shape, rhs, rhs_shape } => write!(
                f,
                "{op} ({op_name}): shapes of {lhs} {lhs_shape} and {rhs} {rhs_shape} do not broadcast"
            ),
            DTypeMismatch { op, op_name, value, expected, found } => write!(
                f,
                "{op} ({op_name}): operand {value} must be {expected}, found {found}"
            ),
            UnsupportedDType { op, op_name, value: Some(value), dtype, accepts } => write!(
                f,
                "{op} ({op_name}): operand {value} has dtype {dtype}; accepts {accepts}"
            ),
            UnsupportedDType { op, op_name, value: None, dtype, accepts } => write!(
                f,
                "{op} ({op_name}): dtype attribute {dtype} not supported; accepts {accepts}"
            ),
            InvalidDType { value, dtype } => write!(
                f,
                "value {value}: FP8 dtype {dtype} has a scale outside [-32, 31]"
            ),
            InvalidAttribute { op, op_name, reason } => write!(f, "{op} ({op_name}): {reason}"),
            ElementCount { op, op_name, value, expected, found } => write!(
                f,
                "{op} ({op_name}): {value} needs {expected} elements, found {found}"
            ),
            ShapeOverflow { value, shape } => {
                write!(f, "value {value}: element count of {shape} overflows")
            }
            ResultType { op, op_name, value, expected, found } => write!(
                f,
                "{op} ({op_name}): result {value} has type {found}, inferred {expected}"
            ),
            ResultCount { op, op_name, expected, found } => write!(
                f,
                "{op} ({op_name}): expected {expected} results, found {found}"
            ),
            NotTopLevel { op, op_name } => write!(
                f,
                "{op} ({op_name}): inputs and parameters must be at top level (pass them to a Repeat as invariants or sequences)"
            ),
            EmptyName { op: Some(op) } => write!(f, "{op}: empty name"),
            EmptyName { op: None } => write!(f, "graph output with an empty name"),
            DuplicateName { op, name, first } => {
                write!(f, "{op}: name \"{name}\" already used by {first}")
            }
            DuplicateOutput { name } => write!(f, "graph output \"{name}\" defined twice"),
            OutputNotTopLevel { name, value } => write!(
                f,
                "graph output \"{name}\": {value} is not a top-level value"
            ),
            RepeatTripCount { op } => write!(f, "{op} (repeat): trip count must be at least 1"),
            RepeatBody { op, region } => write!(
                f,
                "{op} (repeat): body region {region} is not owned by this repeat"
            ),
            RepeatOperandCount { op, expected, found } => write!(
                f,
                "{op} (repeat): expected {expected} operands (carried + invariants + sequences x trip count), found {found}"
            ),
            RepeatArgumentCount { op, region, expected, found } => write!(
                f,
                "{op} (repeat): body {region} must have {expected} arguments (carried + invariants + sequences), found {found}"
            ),
            RepeatArgumentType { op, kind, index, argument, value, expected, found } => write!(
                f,
                "{op} (repeat): {kind} argument {index} ({argument}) has type {found} but {value} is {expected}"
            ),
            RepeatSequenceLength { op, sequence, expected, found } => {
                if let Some(op) = op {
                    write!(f, "{op} (repeat): ")?;
                } else {
                    f.write_str("repeat: ")?;
                }
                write!(
                    f,
                    "sequence {sequence} has {found} values, the trip count is {expected}"
                )
            }
            RepeatSequenceType { op, sequence, iteration, value, expected, found } => {
                if let Some(op) = op {
                    write!(f, "{op} (repeat): ")?;
                } else {
                    f.write_str("repeat: ")?;
                }
                write!(
                    f,
                    "sequence {sequence} element {iteration} ({value}) has type {found}, expected {expected}"
                )
            }
            RepeatYieldCount { op, expected, found } => write!(
                f,
                "{op} (repeat): body yields {found} values for {expected} carried arguments"
            ),
            RepeatYieldType { op, index, value, expected, found } => write!(
                f,
                "{op} (repeat): yield {index} ({value}) has type {found}, carried argument is {expected}"
            ),
            RepeatYieldNotVisible { op, value, region } => write!(
                f,
                "{op} (repeat): yield {value} is not defined in body {region}"
            ),
            StrayRegionInterface { region } => write!(
                f,
                "region {region} has arguments or yields but is not a Repeat body"
            ),
            RepeatNotInnermost { region } => write!(
                f,
                "repeat body {region} is not the innermost open repeat"
            ),
            UnclosedRepeat { region } => write!(f, "repeat body {region} was never closed"),
            RepeatOperandNotVisible { region, kind, value } => write!(
                f,
                "repeat body {region}: {kind} value {value} is not defined in the enclosing region"
            ),
        }
    }
}

impl core::error::Error for IrError {}
