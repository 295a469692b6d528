//! Instruction semantics. Every [`Op`] the decoder can produce is handled
//! here; `t` is the cycle the instruction issues in. The scheduler has
//! already set the context's next ready cycle to `t + ISSUE_INTERVAL`;
//! instructions that hold their context longer raise it.

use super::codelet::{CodeletCall, CodeletFailure};
use super::context::{ContextState, VERTEX_BASE_REG, WORKERS, WORKER_BASE_REG};
use super::cycle::ISSUE_INTERVAL;
use super::fault::FaultKind;
use super::memory::AccessError;
use super::op::{Cond, Op, Src};
use super::profile::{CycleSample, SampleKind};
use super::tile::Tile;

impl From<AccessError> for FaultKind {
    fn from(e: AccessError) -> Self {
        match e {
            AccessError::Misaligned { addr, width } => FaultKind::Misaligned { addr, width },
            AccessError::OutOfRange { addr, width } => FaultKind::OutOfRange { addr, width },
        }
    }
}

impl Tile {
    #[inline]
    fn src(&self, c: usize, s: Src) -> u32 {
        match s {
            Src::Reg(r) => self.contexts[c].reg(r),
            Src::Imm(v) => v,
        }
    }

    /// Execute `op` for context `c` issued at cycle `t`.
    pub(crate) fn execute(&mut self, c: usize, op: Op, t: u64) -> Result<(), FaultKind> {
        let pc = self.contexts[c].pc;
        let mut next = pc.wrapping_add(op.size());
        match op {
            Op::Nop | Op::Sans { .. } => {}
            Op::Setzi { d, imm } => self.contexts[c].set_reg(d, imm),
            Op::Alu { op, d, a, b } => {
                let v = op.apply(self.src(c, a), self.src(c, b));
                self.contexts[c].set_reg(d, v);
            }
            Op::ZeroA { d } => self.contexts[c].a[usize::from(d & 15)] = 0,
            Op::Ld32 {
                d,
                base,
                index,
                offset,
            } => {
                let ctx = &self.contexts[c];
                let addr = ctx.address(base, index, offset);
                let v = self.memory.read_u32(addr)?;
                self.contexts[c].set_reg(d, v);
            }
            Op::Ld32Reg {
                d,
                base,
                index,
                offset,
            } => {
                let ctx = &self.contexts[c];
                let addr = ctx.address(base, index, ctx.reg(offset).wrapping_mul(4));
                let v = self.memory.read_u32(addr)?;
                self.contexts[c].set_reg(d, v);
            }
            Op::St32 {
                s,
                base,
                index,
                offset,
            } => {
                let ctx = &self.contexts[c];
                let addr = ctx.address(base, index, offset);
                let v = ctx.reg(s);
                self.memory.write_u32(addr, v)?;
            }
            Op::St32Step {
                s,
                base,
                index,
                step,
            } => {
                let ctx = &self.contexts[c];
                let i = ctx.reg(index);
                let addr = ctx.reg(base).wrapping_add(i);
                let v = ctx.reg(s);
                self.memory.write_u32(addr, v)?;
                self.contexts[c].set_reg(index, i.wrapping_add(step));
            }
            Op::Stm32 { s, base, offset } => {
                let ctx = &self.contexts[c];
                let addr = ctx.reg(base).wrapping_add(ctx.reg(offset).wrapping_mul(4));
                let v = ctx.reg(s);
                self.memory.write_u32(addr, v)?;
            }
            Op::Bri { target } => next = target,
            Op::Br { r } => next = self.contexts[c].reg(r),
            Op::Branch { cond, r, target } => {
                let v = self.contexts[c].reg(r);
                let taken = match cond {
                    Cond::Zero => v == 0,
                    Cond::NonZero => v != 0,
                    // Decrement only when taken, so a loop entered with
                    // `count − 1` runs `count` times and leaves 0 behind
                    // (facts give the encoding, not this detail: [I]).
                    Cond::NonZeroDec => {
                        if v != 0 {
                            self.contexts[c].set_reg(r, v - 1);
                        }
                        v != 0
                    }
                };
                if taken {
                    next = target;
                }
            }
            Op::Call { link, target } => {
                let ret = pc.wrapping_add(4);
                self.contexts[c].set_reg(link, ret);
                if c == 0 {
                    if let Some(codelet) = self.codelets.get(target).cloned() {
                        let tile = self.id;
                        let charge = {
                            let ctx = &mut self.contexts[0];
                            let mut call = CodeletCall {
                                tile,
                                regs: &mut ctx.m,
                                memory: &mut self.memory,
                            };
                            let r = codelet.run(&mut call);
                            ctx.m[15] = 0;
                            r.map_err(|failure| match failure {
                                CodeletFailure::Operand(fault) => FaultKind::KernelOperand {
                                    kernel: codelet.name().to_owned(),
                                    fault,
                                },
                                CodeletFailure::Other(message) => FaultKind::Codelet {
                                    name: codelet.name().to_owned(),
                                    message,
                                },
                            })?
                        };
                        let end = t + charge.cycles.max(ISSUE_INTERVAL);
                        self.contexts[0].ready_at = end;
                        self.samples.push(CycleSample {
                            kind: SampleKind::Codelet {
                                name: codelet.name().into(),
                                entry: target,
                                arg_block: charge.arg_block,
                            },
                            start: t,
                            end,
                        });
                        self.contexts[0].pc = ret;
                        return Ok(());
                    }
                }
                next = target;
            }
            Op::Exitz { r } => {
                if c == 0 {
                    return Err(FaultKind::InvalidForContext { mnemonic: "exitz" });
                }
                let ctx = &mut self.contexts[c];
                ctx.exit_status = u32::from(ctx.reg(r) == 0);
                ctx.state = ContextState::Idle;
                ctx.pc = next;
                if self.contexts[0].state == ContextState::WaitingForWorkers
                    && !self.workers_running()
                {
                    let s = &mut self.contexts[0];
                    s.state = ContextState::Running;
                    s.ready_at = s.ready_at.max(t + 1);
                }
                return Ok(());
            }
            Op::Put { csr, s } => {
                let v = self.contexts[c].reg(s);
                self.write_csr(c, csr, v)?;
            }
            Op::Get { d, csr } => {
                if matches!(csr, super::csr::COUNT_L | super::csr::COUNT_U) {
                    // What the program does next may depend on the time.
                    self.clock_reads += 1;
                }
                let v = self.read_csr(c, csr, t)?;
                self.contexts[c].set_reg(d, v);
            }
            Op::Sync { zone } => {
                if c != 0 {
                    return Err(FaultKind::InvalidForContext { mnemonic: "sync" });
                }
                if zone == 2 {
                    if self.workers_running() {
                        self.contexts[0].state = ContextState::WaitingForWorkers;
                    }
                } else {
                    self.contexts[0].state = ContextState::AtSync { zone };
                    self.record_compute_end(t + 1);
                }
            }
            Op::Trap { code } => return Err(FaultKind::Trap { code }),
            Op::Delay { events } => {
                let ctx = &mut self.contexts[c];
                ctx.ready_at = t + u64::from(events).max(ISSUE_INTERVAL);
            }
            Op::Runall {
                entry,
                vertex,
                offset,
            } => {
                if c != 0 {
                    return Err(FaultKind::InvalidForContext { mnemonic: "runall" });
                }
                if self.workers_running() {
                    return Err(FaultKind::WorkersBusy);
                }
                let entry = self.contexts[0].reg(entry);
                let vertex = self.contexts[0].reg(vertex).wrapping_add(offset);
                for k in 0..WORKERS {
                    let base = self.sup_csr[usize::from(super::csr::WORKER0_BASE) + k];
                    let w = &mut self.contexts[1 + k];
                    w.pc = entry;
                    w.set_reg(WORKER_BASE_REG, base);
                    w.set_reg(VERTEX_BASE_REG, vertex);
                    w.state = ContextState::Running;
                    w.ready_at = t + 1;
                }
            }
            Op::Exchange { kind, .. } => {
                return Err(FaultKind::ExchangeInInterpreter {
                    mnemonic: kind.mnemonic(),
                })
            }
        }
        self.contexts[c].pc = next;
        Ok(())
    }
}
