//! Linker: places the sections of one or more objects at addresses, resolves
//! symbols and relocations, and produces a word image with a listing.

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::build::{build, ROp, ROps, RVal};
use super::error::{AsmError, AsmErrorKind, Loc};
use super::expr::SymbolEnv;
use super::object::*;
use ipuc_target::ipu21::isa::{
    decode, encode, CsrContext, Instruction, SyncZone, NOP_WORD, SENDPICP_ALIGN,
};
use ipuc_target::lookup::LookupMap;

/// Default link base: where tile images start (defined in `target::sram`).
pub use ipuc_target::ipu21::sram::APPLICATION_LOAD_BASE;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkOptions {
    /// Address of the first placed byte (code first, then data).
    pub base: u32,
    /// Absolute symbols supplied by the caller (like `ld --defsym`), used for
    /// names no object defines: e.g. the runtime's link-time layout symbols.
    pub defines: BTreeMap<String, i64>,
    /// Whether to build [`Image::listing`] (disassembly of every item);
    /// the compile pipeline links without it. The checks made while
    /// listing (a misaligned `sendpicp`) run either way.
    pub listing: bool,
}

impl Default for LinkOptions {
    fn default() -> Self {
        LinkOptions::at(APPLICATION_LOAD_BASE)
    }
}

impl LinkOptions {
    /// Options linking at `base` with no extra symbols.
    pub fn at(base: u32) -> LinkOptions {
        LinkOptions {
            base,
            defines: BTreeMap::new(),
            listing: true,
        }
    }

    /// The same options without a listing.
    pub fn without_listing(mut self) -> LinkOptions {
        self.listing = false;
        self
    }
}

/// A symbol after linking.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkedSymbol {
    /// Address (labels) or value (`.set`), truncated to 32 bits.
    pub value: u32,
    pub is_label: bool,
    pub global: bool,
    pub ty: SymbolType,
    pub size: Option<u32>,
    pub context: CodeContext,
}

/// One listing line: the words of one instruction, data item or padding run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListingLine {
    pub address: u32,
    pub words: Vec<u32>,
    /// Disassembly (instructions), `.long 0x…` (data) or `nop` / `.long 0` (padding).
    pub text: String,
    /// The label a branch/call target points at, as objdump's `<name>`.
    pub note: Option<String>,
    /// Labels at this address, in definition order.
    pub labels: Vec<String>,
    pub file: String,
    pub line: u32,
}

/// A linked program: contiguous words from `base`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    pub base: u32,
    pub words: Vec<u32>,
    /// Global symbols, plus local ones whose names no earlier object used.
    pub symbols: BTreeMap<String, LinkedSymbol>,
    pub listing: Vec<ListingLine>,
}

impl Image {
    /// Address or value of a symbol.
    pub fn symbol(&self, name: &str) -> Option<u32> {
        self.symbols.get(name).map(|s| s.value)
    }
    /// Address one past the last word.
    pub fn end(&self) -> u32 {
        self.base.wrapping_add(self.words.len() as u32 * 4)
    }
    /// The image as little-endian bytes (the tile's memory order, §0).
    pub fn to_le_bytes(&self) -> Vec<u8> {
        self.words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }
}

struct Linker<'a> {
    objects: &'a [&'a Object],
    /// Address of each section, per object.
    addresses: Vec<Vec<u32>>,
    /// Global name → (object, symbol index); lookup only.
    globals: LookupMap<&'a str, (usize, usize)>,
    defines: &'a BTreeMap<String, i64>,
    /// Per object: defined symbol name → index (the last definition of a
    /// repeated name, as collecting into any map keeps); lookup only.
    local: Vec<LookupMap<&'a str, usize>>,
}

struct Env<'l, 'a> {
    linker: &'l Linker<'a>,
    object: usize,
}

impl SymbolEnv for Env<'_, '_> {
    fn symbol(
        &self,
        name: &str,
        loc: Loc,
        depth: usize,
    ) -> Result<Option<i64>, (Loc, AsmErrorKind)> {
        let objects = self.linker.objects;
        let local = self.linker.local[self.object].get(name).copied();
        let (obj, idx) = match local {
            Some(i) => (self.object, i),
            None => match self.linker.globals.get(name) {
                Some(&found) => found,
                None => match (self.linker.defines.get(name), SyncZone::by_name(name)) {
                    (Some(&v), _) => return Ok(Some(v)),
                    (None, Some(z)) => return Ok(Some(z.index() as i64)),
                    (None, None) => return Err((loc, AsmErrorKind::UndefinedSymbol(name.into()))),
                },
            },
        };
        match &objects[obj].symbols[idx].value {
            Some(SymbolValue::Label { section, offset }) => {
                Ok(self.linker.here(obj, *section, *offset))
            }
            Some(SymbolValue::Set(e)) => e.eval_set(
                &Env {
                    linker: self.linker,
                    object: obj,
                },
                name,
                loc,
                depth,
            ),
            None => Err((loc, AsmErrorKind::UndefinedSymbol(name.into()))),
        }
    }
    fn here(&self, section: usize, offset: u32) -> Option<i64> {
        self.linker.here(self.object, section, offset)
    }
}

impl Linker<'_> {
    fn here(&self, object: usize, section: usize, offset: u32) -> Option<i64> {
        let base = *self.addresses.get(object)?.get(section)?;
        Some(base as i64 + offset as i64)
    }

    fn eval(&self, object: usize, e: &super::expr::Expr) -> Result<i64, AsmError> {
        let file = &self.objects[object].file;
        match e.eval(
            &Env {
                linker: self,
                object,
            },
            0,
        ) {
            Ok(Some(v)) => Ok(v),
            // Every symbol and section has an address at link time.
            Ok(None) => Err(AsmError::new(
                file,
                Loc::default(),
                AsmErrorKind::UndefinedSymbol(".".into()),
            )),
            Err((loc, kind)) => Err(AsmError::new(file, loc, kind)),
        }
    }
}

/// The code address an instruction transfers control to, if it has one.
fn branch_target(i: &Instruction) -> Option<u32> {
    match *i {
        Instruction::Call { target, .. }
        | Instruction::Bri { target }
        | Instruction::Brz { target, .. }
        | Instruction::Brnz { target, .. }
        | Instruction::Brnzdec { target, .. } => Some(target),
        _ => None,
    }
}

fn align_up(addr: u64, align: u32) -> u64 {
    let a = align.max(4) as u64;
    addr.div_ceil(a) * a
}

/// The one placement check the listing makes, without the listing: no
/// `sendpicp` at an address off its alignment (only items at such an
/// address are decoded).
fn check_sendpicp_alignment(
    objects: &[&Object],
    order: &[(usize, usize)],
    linker: &Linker<'_>,
    words: &[u32],
    base: u32,
) -> Result<(), AsmError> {
    for &(oi, si) in order {
        let sec = &objects[oi].sections[si];
        let start = linker.addresses[oi][si];
        for item in sec.items.iter().filter(|i| i.what == ItemKind::Instruction) {
            let address = start + item.offset;
            if address & (SENDPICP_ALIGN - 1) == 0 {
                continue;
            }
            let at = ((start - base) / 4 + item.offset / 4) as usize;
            let ws = &words[at..at + item.words as usize];
            if let Ok((Instruction::SendPicP { .. }, _)) = decode(ws) {
                return Err(AsmError::new(
                    &objects[oi].file,
                    item.loc,
                    AsmErrorKind::MisalignedSendpicp { address },
                ));
            }
        }
    }
    Ok(())
}

/// Links objects: code sections first (grouped by name in first-appearance
/// order), then data sections, each at its alignment, starting at `opts.base`.
pub fn link(objects: &[Object], opts: &LinkOptions) -> Result<Image, AsmError> {
    let objects: Vec<&Object> = objects.iter().collect();
    link_refs(&objects, opts)
}

/// [`link`] over borrowed objects (a caller linking the same runtime and
/// stub objects into many images need not copy them).
pub fn link_refs(objects: &[&Object], opts: &LinkOptions) -> Result<Image, AsmError> {
    // Words are placed at word addresses: a misaligned base would shift
    // every address the image's symbols name.
    if !opts.base.is_multiple_of(4) {
        let file = objects.first().map_or("<link>", |o| o.file.as_str());
        return Err(AsmError::new(
            file,
            Loc::default(),
            AsmErrorKind::MisalignedBase { base: opts.base },
        ));
    }
    let order = placement_order(objects);
    let LaidOut {
        addresses,
        mut words,
        mut listing,
    } = lay_out(objects, &order, opts)?;
    let linker = Linker::new(objects, addresses, &opts.defines)?;
    apply_relocations(objects, &linker, &mut words, opts.base)?;
    if opts.listing {
        list_items(objects, &order, &linker, &words, opts.base, &mut listing)?;
    } else {
        check_sendpicp_alignment(objects, &order, &linker, &words, opts.base)?;
    }
    listing.sort_by_key(|l| l.address);
    let symbols = linked_symbols(objects, &linker, opts)?;
    Ok(Image {
        base: opts.base,
        words,
        symbols,
        listing,
    })
}

/// An error at `loc` in object `o`'s file.
fn err(objects: &[&Object], o: usize, loc: Loc, kind: AsmErrorKind) -> AsmError {
    AsmError::new(&objects[o].file, loc, kind)
}

/// Placement order: code sections, then data sections, each kind grouped
/// by name in first-appearance order, objects in order within a name.
fn placement_order(objects: &[&Object]) -> Vec<(usize, usize)> {
    let mut order: Vec<(usize, usize)> = Vec::new();
    for kind in [SectionKind::Code, SectionKind::Data] {
        let mut names: Vec<&str> = Vec::new();
        for o in objects {
            for s in o.sections.iter().filter(|s| s.kind == kind) {
                if !names.contains(&s.name.as_str()) {
                    names.push(&s.name);
                }
            }
        }
        for name in names {
            for (oi, o) in objects.iter().enumerate() {
                for (si, s) in o.sections.iter().enumerate() {
                    if s.kind == kind && s.name == name {
                        order.push((oi, si));
                    }
                }
            }
        }
    }
    order
}

/// Sections placed: each one's address (per object), the image words
/// before relocation, and the listing lines of the gaps.
struct LaidOut {
    addresses: Vec<Vec<u32>>,
    words: Vec<u32>,
    listing: Vec<ListingLine>,
}

/// Each section's address (per object) from `opts.base` in `order`, at its
/// alignment, and the image words with the gaps filled (`nop` in code, 0 in
/// data; listed when `opts.listing`).
fn lay_out(
    objects: &[&Object],
    order: &[(usize, usize)],
    opts: &LinkOptions,
) -> Result<LaidOut, AsmError> {
    let mut addresses: Vec<Vec<u32>> = objects
        .iter()
        .map(|o| alloc::vec![0; o.sections.len()])
        .collect();
    let mut addr = opts.base as u64;
    let mut words: Vec<u32> = Vec::new();
    let mut listing = Vec::new();
    for &(oi, si) in order {
        let sec = &objects[oi].sections[si];
        let start = align_up(addr, sec.align);
        if start + sec.size() as u64 > u32::MAX as u64 {
            let loc = sec.items.first().map_or(Loc::default(), |i| i.loc);
            return Err(err(objects, oi, loc, AsmErrorKind::AddressOverflow));
        }
        let gap = ((start - addr) / 4) as usize;
        if gap > 0 {
            let fill = if sec.kind == SectionKind::Code {
                NOP_WORD
            } else {
                0
            };
            if opts.listing {
                listing.push(ListingLine {
                    address: addr as u32,
                    words: alloc::vec![fill; gap],
                    text: if fill == NOP_WORD {
                        "nop".into()
                    } else {
                        ".long 0".into()
                    },
                    note: None,
                    labels: Vec::new(),
                    file: objects[oi].file.clone(),
                    line: 0,
                });
            }
            words.extend(core::iter::repeat_n(fill, gap));
        }
        addresses[oi][si] = start as u32;
        words.extend_from_slice(&sec.words);
        addr = start + sec.size() as u64;
    }
    Ok(LaidOut {
        addresses,
        words,
        listing,
    })
}

impl<'a> Linker<'a> {
    /// The symbol tables of laid-out objects; a global defined twice is an
    /// error.
    fn new(
        objects: &'a [&'a Object],
        addresses: Vec<Vec<u32>>,
        defines: &'a BTreeMap<String, i64>,
    ) -> Result<Self, AsmError> {
        let err = |o: usize, loc: Loc, kind| err(objects, o, loc, kind);
        let mut linker = Linker {
            objects,
            addresses,
            globals: LookupMap::default(),
            defines,
            local: objects
                .iter()
                .map(|o| {
                    o.symbols
                        .iter()
                        .enumerate()
                        .filter(|(_, s)| s.value.is_some())
                        .map(|(i, s)| (s.name.as_str(), i))
                        .collect()
                })
                .collect(),
        };
        for (oi, o) in objects.iter().enumerate() {
            for (i, s) in o.symbols.iter().enumerate() {
                if !(s.global && s.value.is_some()) {
                    continue;
                }
                if let Some((po, pi)) = linker.globals.insert(&s.name, (oi, i)) {
                    let before = &objects[po];
                    let at = before.symbols[pi].loc;
                    return Err(err(
                        oi,
                        s.loc,
                        AsmErrorKind::DuplicateGlobal {
                            name: s.name.clone(),
                            first: alloc::format!("{}:{}:{}", before.file, at.line, at.col),
                        },
                    ));
                }
            }
        }
        Ok(linker)
    }

    /// Index in the image of byte `offset` of object `oi`'s section `si`.
    fn word_index(&self, base: u32, oi: usize, si: usize, offset: u32) -> usize {
        ((self.addresses[oi][si] - base) / 4 + offset / 4) as usize
    }
}

/// Resolves every relocation (32-bit words and instructions whose operands
/// name symbols) into `words`.
fn apply_relocations(
    objects: &[&Object],
    linker: &Linker<'_>,
    words: &mut [u32],
    base: u32,
) -> Result<(), AsmError> {
    let err = |o: usize, loc: Loc, kind| err(objects, o, loc, kind);
    for (oi, o) in objects.iter().enumerate() {
        for r in &o.relocations {
            let at = linker.word_index(base, oi, r.section, r.offset);
            match &r.kind {
                RelocKind::Word32(e) => {
                    let v = linker.eval(oi, e)?;
                    if !(i32::MIN as i64..=u32::MAX as i64).contains(&v) {
                        let kind = AsmErrorKind::ValueRange {
                            what: "32-bit word",
                            value: v,
                            min: i32::MIN as i64,
                            max: u32::MAX as i64,
                        };
                        return Err(err(oi, r.loc, kind));
                    }
                    words[at] = v as u32;
                }
                RelocKind::Instruction { mnemonic, operands } => {
                    // The object's operands have the same fixed capacity.
                    let mut rops = ROps::new();
                    for op in operands.iter() {
                        let val = match &op.operand {
                            Operand::MReg(m) => RVal::MReg(*m),
                            Operand::MRegPostInc(m) => RVal::MRegPostInc(*m),
                            Operand::AReg(a) => RVal::AReg(*a),
                            Operand::Csr(c) => RVal::Csr(*c),
                            Operand::Expr(e) => RVal::Value(linker.eval(oi, e)?),
                        };
                        rops.push(ROp {
                            val,
                            loc: op.loc,
                            text: &op.text,
                        })
                        .map_err(|_| {
                            let (loc, kind) = AsmErrorKind::too_many_operands(mnemonic, op.clone());
                            err(oi, loc, kind)
                        })?;
                    }
                    let instr =
                        build(mnemonic, &rops, r.loc).map_err(|(loc, kind)| err(oi, loc, kind))?;
                    let enc = encode(&instr).map_err(|error| {
                        err(
                            oi,
                            r.loc,
                            AsmErrorKind::Isa {
                                mnemonic: instr.mnemonic(),
                                error,
                            },
                        )
                    })?;
                    for (k, w) in enc.words().iter().enumerate() {
                        words[at + k] = *w;
                    }
                }
            }
        }
    }
    Ok(())
}

/// The listing of every item (first label at each address names branch
/// targets); a `sendpicp` off its alignment is an error here too.
fn list_items(
    objects: &[&Object],
    order: &[(usize, usize)],
    linker: &Linker<'_>,
    words: &[u32],
    base: u32,
    listing: &mut Vec<ListingLine>,
) -> Result<(), AsmError> {
    let err = |o: usize, loc: Loc, kind| err(objects, o, loc, kind);
    let mut label_at: BTreeMap<u32, String> = BTreeMap::new();
    let mut labels_of: BTreeMap<(usize, usize, u32), Vec<String>> = BTreeMap::new();
    for (oi, o) in objects.iter().enumerate() {
        for s in &o.symbols {
            if let Some(SymbolValue::Label { section, offset }) = s.value {
                let addr = linker.addresses[oi][section].wrapping_add(offset);
                label_at.entry(addr).or_insert_with(|| s.name.clone());
                labels_of
                    .entry((oi, section, offset))
                    .or_default()
                    .push(s.name.clone());
            }
        }
    }
    for &(oi, si) in order {
        let sec = &objects[oi].sections[si];
        let section_base = linker.addresses[oi][si];
        for item in &sec.items {
            let address = section_base + item.offset;
            let at = linker.word_index(base, oi, si, item.offset);
            let ws = words[at..at + item.words as usize].to_vec();
            let mut note = None;
            let text = match item.what {
                ItemKind::Instruction => match decode(&ws) {
                    Ok((i, _)) => {
                        if matches!(i, Instruction::SendPicP { .. })
                            && address & (SENDPICP_ALIGN - 1) != 0
                        {
                            return Err(err(
                                oi,
                                item.loc,
                                AsmErrorKind::MisalignedSendpicp { address },
                            ));
                        }
                        let ctx = match item.context {
                            CodeContext::Worker => CsrContext::Worker,
                            CodeContext::Supervisor => CsrContext::Supervisor,
                        };
                        note = branch_target(&i).and_then(|t| label_at.get(&t).cloned());
                        i.disasm(ctx).to_string()
                    }
                    Err(e) => format!("<{e}>"),
                },
                ItemKind::Data => format!(".long {:#010x}", ws.first().copied().unwrap_or(0)),
                ItemKind::Padding if ws.first() == Some(&NOP_WORD) => "nop".into(),
                ItemKind::Padding => format!(".long {:#010x}", ws.first().copied().unwrap_or(0)),
            };
            let labels = labels_of.remove(&(oi, si, item.offset)).unwrap_or_default();
            listing.push(ListingLine {
                address,
                words: ws,
                text,
                note,
                labels,
                file: objects[oi].file.clone(),
                line: item.loc.line,
            });
        }
    }
    Ok(())
}

/// Every defined symbol's linked value (a global wins over a local of the
/// same name); a `.globl` defined nowhere is an error.
fn linked_symbols(
    objects: &[&Object],
    linker: &Linker<'_>,
    opts: &LinkOptions,
) -> Result<BTreeMap<String, LinkedSymbol>, AsmError> {
    let err = |o: usize, loc: Loc, kind| err(objects, o, loc, kind);
    let mut symbols = BTreeMap::new();
    for (oi, o) in objects.iter().enumerate() {
        for s in o.symbols.iter().filter(|s| s.value.is_some()) {
            if !s.global && symbols.contains_key(&s.name) {
                continue;
            }
            let value = linker.eval(
                oi,
                &super::expr::Expr::Sym {
                    name: s.name.clone(),
                    loc: s.loc,
                },
            )?;
            let size = match &s.size {
                Some(e) => Some(linker.eval(oi, e)? as u32),
                None => None,
            };
            let is_label = matches!(s.value, Some(SymbolValue::Label { .. }));
            symbols.insert(
                s.name.clone(),
                LinkedSymbol {
                    value: value as u32,
                    is_label,
                    global: s.global,
                    ty: s.ty,
                    size,
                    context: s.context,
                },
            );
        }
        if let Some(s) = o.symbols.iter().find(|s| {
            s.global
                && s.value.is_none()
                && !linker.globals.contains_key(s.name.as_str())
                && !opts.defines.contains_key(&s.name)
        }) {
            // `.globl name` with no definition anywhere.
            return Err(err(
                oi,
                s.loc,
                AsmErrorKind::UndefinedSymbol(s.name.clone()),
            ));
        }
    }
    Ok(symbols)
}
