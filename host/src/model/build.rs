//! Graph construction, following HF `modeling_siglip.py` (facts §1.2) and,
//! for the other families, `modeling_clip.py`, `modeling_vit.py` and
//! `modeling_dinov2.py` (transformers 5.24; see [`Family`]).

use ipuc_core::ir::{
    Activation, DType, GraphBuilder, IrError, OpId, TensorType, ValueDef, ValueId,
};

use super::family::Family;
use super::params::{layer_name, ParameterRole, ParameterSpec, PositionResample, ZeroPad};
use super::{
    ModelError, ModelOptions, SiglipModel, VisionConfig, LAST_HIDDEN_STATE, PIXEL_VALUES,
    POOLER_OUTPUT,
};

/// Label prefix of the encoder body's ops: HF's module path, with `*` for
/// the layer (the body is one Repeat over all layers), e.g.
/// `encoder.layers.*.self_attn.q_proj`.
pub const LAYER: &str = "encoder.layers.*";

/// Build the vision tower graph for `config` with `options`.
pub fn build_siglip(
    config: &VisionConfig,
    options: &ModelOptions,
) -> Result<SiglipModel, ModelError> {
    let (layers, weight_dtype, gemm_input) = checked_options(config, options)?;
    let mut t = Tower {
        b: GraphBuilder::new(),
        params: Vec::new(),
        gemm_input,
        fp8_inputs: Vec::new(),
        act: options.activations,
        attn: options.attention,
        weight: weight_dtype,
        eps: config.layer_norm_eps as f32,
        d: config.hidden_size,
        heads: config.num_attention_heads,
        family: config.family,
        mlp_act: mlp_activation(&config.hidden_act),
    };
    let batch = options.vit_batch;
    let family = config.family;
    let (pixels, x) = t.embeddings(config, batch)?;

    // 4. Encoder: one Repeat, residual stream carried.
    let (encoder, x) = t.encoder(config, options.fuse_qkv, layers, x)?;
    // The one-time bookends keep FP16 activations (FP8 weights widened):
    // they cost little, and the MAP head's one-row products would be
    // K-split wide, whose FP16 partials the reference sums in another order.
    t.gemm_input = None;

    // 5. The final norm → last_hidden_state (HF CLIPVisionTransformer: the
    //    encoder output itself), output before the pooler is built.
    let hidden = match family {
        Family::Siglip => t.final_norm("post_layernorm", x)?,
        Family::Clip => x,
        Family::Vit | Family::Dinov2 => t.final_norm("layernorm", x)?,
    };
    let last_hidden_state = t.cast_to(hidden, DType::F32)?;
    t.b.output(LAST_HIDDEN_STATE, last_hidden_state)?;

    let pooled = t.pooler(config, hidden, batch)?;

    let graph = t.b.finish()?;
    Ok(SiglipModel {
        config: config.clone(),
        options: options.clone(),
        layers,
        graph,
        parameters: t.params,
        pixel_values: pixels,
        encoder,
        last_hidden_state,
        pooled,
    })
}

/// The options checked against `config`: the layer count, batch and
/// precisions; returns the layers to build, the weights' dtype and the
/// FP8 type of GEMM inputs, if any.
fn checked_options(
    config: &VisionConfig,
    options: &ModelOptions,
) -> Result<(usize, DType, Option<DType>), ModelError> {
    config.validate()?;
    let layers = options.vit_layers.unwrap_or(config.num_hidden_layers);
    if layers == 0 || layers > config.num_hidden_layers {
        return Err(ModelError::LayerCount {
            requested: layers,
            available: config.num_hidden_layers,
        });
    }
    if options.vit_batch == 0 {
        return Err(ModelError::BatchSize);
    }
    for (what, dtype) in [
        ("activation", options.activations),
        ("attention", options.attention),
    ] {
        if !dtype.is_arithmetic() {
            return Err(ModelError::Precision { what, dtype });
        }
    }
    let weight_dtype = match options.fp8_scale {
        Some(scale) => {
            let dtype = DType::f143(scale);
            if !dtype.is_valid() {
                return Err(ModelError::Fp8Scale { scale });
            }
            dtype
        }
        None => options.activations,
    };
    config.check_limits(
        layers,
        options.vit_batch,
        weight_dtype.size_bytes() as u64,
        options.activations.size_bytes() as u64,
    )?;
    let gemm_input = match (options.fp8_scale, options.fp8_activation_scale) {
        (Some(_), Some(scale)) => {
            let dtype = DType::f143(scale);
            if !dtype.is_valid() {
                return Err(ModelError::Fp8Scale { scale });
            }
            Some(dtype)
        }
        _ => None,
    };
    Ok((layers, weight_dtype, gemm_input))
}

impl Tower {
    /// Steps 1 to 3, the embeddings: patches (im2col + matmul), the class
    /// token, learned positions, and for CLIP the pre-encoder norm.
    /// Returns the pixel input and the encoder's input.
    fn embeddings(
        &mut self,
        config: &VisionConfig,
        batch: usize,
    ) -> Result<(ValueId, ValueId), ModelError> {
        let t = self;
        let family = config.family;
        let (c, s, p) = (config.num_channels, config.image_size, config.patch_size);
        // 1. Patch embedding: the stride-p conv as im2col + matmul (+ bias;
        //    CLIP's conv has none).
        let pixels =
            t.b.input(PIXEL_VALUES, TensorType::new(DType::F32, [batch, c, s, s]))?;
        let cols = t.b.im2col_patches(pixels, p)?;
        t.b.label(cols, "embeddings.patchify")?;
        // An odd patch makes `C·p·p` odd, and a row of an odd number of
        // FP16 or FP8 elements is not a whole number of the words the
        // exchange moves, so no GEMM layout could be reached. Both operands
        // get columns up to a multiple of 4: the weight zeros (added when
        // it is bound), the pixels a copy of their first columns (here, in
        // F32, where any column count moves; the compiler takes no
        // constants). Each extra product is a finite pixel times zero, an
        // exact zero, so the result is unchanged.
        let k = c * p * p;
        let k_padded = k.next_multiple_of(4);
        let cols = if k_padded == k {
            cols
        } else {
            let extra =
                t.slice_named(cols, 2, 0, k_padded - k, "embeddings.patchify.pad_columns")?;
            let y = t.b.concat(&[cols, extra], 2)?;
            t.b.label(y, "embeddings.patchify.padded")?
        };
        let cols = t.cast_to(cols, t.act)?;
        let patch = match family {
            Family::Siglip | Family::Clip => "embeddings.patch_embedding",
            Family::Vit | Family::Dinov2 => "embeddings.patch_embeddings.projection",
        };
        let pw = if k_padded == k {
            let pw = t.single(
                &format!("{patch}.weight"),
                vec![t.d, c, p, p],
                ParameterRole::GemmWeight,
            )?;
            t.b.reshape(pw, [t.d, k])?
        } else {
            t.padded(
                &format!("{patch}.weight"),
                vec![t.d, k_padded],
                vec![t.d, c, p, p],
                ParameterRole::GemmWeight,
            )?
        };
        t.b.label(pw, "embeddings.patch_embedding.weight_matrix")?;
        let x = if family == Family::Clip {
            let y = t.b.matmul_transposed(cols, pw, t.act)?;
            t.b.label(y, "embeddings.patch_embedding")?
        } else {
            let pb = t.single(&format!("{patch}.bias"), vec![t.d], ParameterRole::GemmBias)?;
            // The patch embedding keeps FP16 activations: it runs once, on pixels.
            t.linear_with(cols, pw, pb, "embeddings.patch_embedding", None)?
        };
        // 2. The class token in front (one copy per image).
        let x = if family.has_class_token() {
            t.prepend_class_token(x, batch)?
        } else {
            x
        };
        // 3. Learned positions (position_ids = 0..tokens, not in the checkpoint).
        let pos = t.positions(config)?;
        let pos = t.per_image(pos, batch, "embeddings.position_embedding.expand")?;
        let x = t.b.add(x, pos)?;
        t.b.label(x, "embeddings.position_add")?;
        // CLIP normalises the embeddings before the encoder.
        let x = if family == Family::Clip {
            let w = t.single("pre_layrnorm.weight", vec![t.d], ParameterRole::NormScale)?;
            let b = t.single("pre_layrnorm.bias", vec![t.d], ParameterRole::NormBias)?;
            let y = t.b.layer_norm(x, w, b, t.eps)?;
            t.b.label(y, "pre_layrnorm")?
        } else {
            x
        };
        Ok((pixels, x))
    }

    /// Step 6, the family's pooler over `hidden` → `pooler_output` (F32),
    /// if the family has one.
    fn pooler(
        &mut self,
        config: &VisionConfig,
        hidden: ValueId,
        batch: usize,
    ) -> Result<Option<ValueId>, ModelError> {
        let t = self;
        let family = config.family;
        let pooled = match family {
            Family::Siglip if config.vision_use_head => {
                let y = t.map_head(config, hidden, batch)?;
                let y = t.b.reshape(y, [batch, t.d])?;
                Some(t.b.label(y, "head.pool")?)
            }
            // post_layernorm of the class token.
            Family::Clip => {
                let cls = t.class_row(hidden, batch)?;
                Some(t.final_norm("post_layernorm", cls)?)
            }
            Family::Vit if config.vision_use_head => Some(t.vit_pooler(hidden, batch)?),
            Family::Dinov2 => Some(t.class_row(hidden, batch)?),
            Family::Siglip | Family::Vit => None,
        };
        let Some(y) = pooled else {
            return Ok(None);
        };
        let y = t.cast_to(y, DType::F32)?;
        t.b.output(POOLER_OUTPUT, y)?;
        Ok(Some(y))
    }
}

/// The MLP width the graph uses for `f`: the next multiple of 4. Rows of
/// FP16 or FP8 elements move between tiles as whole 32-bit words, so fc2's
/// K (and fc1's output rows) must be; the extra fc1 rows and bias are zero,
/// every activation maps 0 to 0, and fc2's extra columns are zero, so they
/// add exact zeros.
fn mlp_width(f: usize) -> usize {
    f.next_multiple_of(4)
}

struct Tower {
    b: GraphBuilder,
    params: Vec<ParameterSpec>,
    /// FP8 type the projections' and MLPs' activations are cast to for an
    /// FP8 × FP8 product (`None`: they stay in the activation dtype).
    gemm_input: Option<DType>,
    /// Activations already cast for a GEMM: (value, its FP8 cast), so the
    /// three unfused Q/K/V projections share one cast.
    fp8_inputs: Vec<(ValueId, ValueId)>,
    act: DType,
    attn: DType,
    weight: DType,
    eps: f32,
    d: usize,
    heads: usize,
    family: Family,
    /// The MLP activation (`None`: the tanh GELU op).
    mlp_act: Option<Activation>,
}

/// The IR op for an HF activation name (validated by the config): `None`
/// for the tanh GELU, which has its own op.
fn mlp_activation(hidden_act: &str) -> Option<Activation> {
    match hidden_act {
        "gelu" => Some(Activation::GeluErf),
        "quick_gelu" => Some(Activation::QuickGelu),
        _ => None,
    }
}

/// One per-layer tensor: its name suffix, shape, role and checkpoint parts
/// (and its stored shape when it is padded, see [`ZeroPad`]).
struct LayerSlot {
    suffix: String,
    shape: Vec<usize>,
    role: ParameterRole,
    parts: Vec<String>,
    pad: Option<ZeroPad>,
}

/// Body arguments of one layer, by position in the slot list.
struct LayerArgs(Vec<ValueId>);

impl LayerArgs {
    fn get(&self, slot: usize) -> ValueId {
        self.0[slot]
    }
}

impl Tower {
    fn dtype_for(&self, role: ParameterRole) -> DType {
        match role {
            ParameterRole::GemmWeight => self.weight,
            _ => self.act,
        }
    }

    fn cast_to(&mut self, x: ValueId, to: DType) -> Result<ValueId, IrError> {
        if self.b.ty(x)?.dtype == to {
            Ok(x)
        } else {
            // Named after what it converts (`head.pool.to_f32`), so reports
            // show a model name rather than `cast#N`.
            let name = self
                .b
                .graph()
                .defining_op(x)
                .and_then(|op| self.b.graph().label(op))
                .map(|l| format!("{l}.to_{}", format!("{to:?}").to_lowercase()));
            let y = self.b.cast(x, to)?;
            match name {
                Some(n) => self.b.label(y, &n),
                None => Ok(y),
            }
        }
    }

    /// `x` cast to the FP8 GEMM input type `dtype`, once per value,
    /// labelled after its producer (`….layer_norm1.to_fp8`), or after the
    /// GEMM `consumer` when `x` has no producer label (a parameter).
    fn fp8_input(&mut self, x: ValueId, dtype: DType, consumer: &str) -> Result<ValueId, IrError> {
        if self.b.ty(x)?.dtype == dtype {
            // Produced in FP8 already (a fused cast).
            return Ok(x);
        }
        if let Some(&(_, cast)) = self.fp8_inputs.iter().find(|(v, _)| *v == x) {
            return Ok(cast);
        }
        let label = self
            .b
            .graph()
            .defining_op(x)
            .and_then(|op| self.b.graph().label(op))
            .map_or_else(
                || format!("{consumer}.input_to_fp8"),
                |l| format!("{l}.to_fp8"),
            );
        let cast = self.b.cast(x, dtype)?;
        let cast = self.b.label(cast, &label)?;
        self.fp8_inputs.push((x, cast));
        Ok(cast)
    }

    /// The FP8 type a GEMM with weight `w` reads its activations in, when
    /// `input` asks for one and the weight is FP8 too.
    fn fp8_input_type(&self, input: Option<DType>, w: ValueId) -> Result<Option<DType>, IrError> {
        let weight_is_fp8 = matches!(self.b.ty(w)?.dtype, DType::F8 { .. });
        Ok(input.filter(|_| weight_is_fp8))
    }

    /// LayerNorm labelled `name` whose only consumers are GEMMs with
    /// weight `w`: it stores its result in their FP8 input type when they
    /// read one (the cast fused into the LayerNorm, no pass of its own).
    fn layer_norm_for_gemm(
        &mut self,
        x: ValueId,
        [gamma, beta]: [ValueId; 2],
        w: ValueId,
        name: &str,
    ) -> Result<ValueId, IrError> {
        let y = match self.fp8_input_type(self.gemm_input, w)? {
            Some(dtype) => self
                .b
                .layer_norm_stored_as(x, gamma, beta, self.eps, dtype)?,
            None => self.b.layer_norm(x, gamma, beta, self.eps)?,
        };
        self.b.label(y, name)
    }

    /// `slice` labelled `name` (the model's name for the part it takes).
    fn slice_named(
        &mut self,
        x: ValueId,
        axis: usize,
        start: usize,
        end: usize,
        name: &str,
    ) -> Result<ValueId, IrError> {
        let y = self.b.slice(x, axis, start, end)?;
        self.b.label(y, name)
    }

    /// The class token prepended to every image's patches:
    /// `[B, N, D]` → `[B, 1 + N, D]`.
    fn prepend_class_token(&mut self, x: ValueId, batch: usize) -> Result<ValueId, IrError> {
        let cls = match self.family {
            Family::Clip => self.single(
                "embeddings.class_embedding",
                vec![self.d],
                ParameterRole::ClassToken,
            )?,
            _ => self.single(
                "embeddings.cls_token",
                vec![1, 1, self.d],
                ParameterRole::ClassToken,
            )?,
        };
        let cls = self.b.reshape(cls, [1, 1, self.d])?;
        self.b.label(cls, "embeddings.class_token")?;
        let cls = if batch > 1 {
            let copies = vec![cls; batch];
            let y = self.b.concat(&copies, 0)?;
            self.b.label(y, "embeddings.class_token.expand")?
        } else {
            cls
        };
        let y = self.b.concat(&[cls, x], 1)?;
        self.b.label(y, "embeddings.prepend_class_token")
    }

    /// `x` (one image's `[T, D]` or `[1, T, D]`) once per image as
    /// `[batch, T, D]`, labelled `name`; `x` itself at batch 1. The device
    /// compiler's element-wise ops broadcast a single row only, so a
    /// per-image table is copied per image (exact: a copy).
    fn per_image(&mut self, x: ValueId, batch: usize, name: &str) -> Result<ValueId, IrError> {
        if batch <= 1 {
            return Ok(x);
        }
        let dims = self.b.ty(x)?.shape.dims().to_vec();
        let (t, d) = (dims[dims.len() - 2], dims[dims.len() - 1]);
        let x = if dims.len() == 3 {
            x
        } else {
            self.b.reshape(x, [1, t, d])?
        };
        let copies = vec![x; batch];
        let y = self.b.concat(&copies, 0)?;
        self.b.label(y, name)
    }

    /// The position table as the graph adds it (`[tokens, D]` or ViT's and
    /// DINOv2's `[1, tokens, D]`), resampled from the stored grid when the
    /// image size differs (`--image-size`, as transformers'
    /// `interpolate_pos_encoding`).
    fn positions(&mut self, config: &VisionConfig) -> Result<ValueId, IrError> {
        let tokens = config.num_tokens();
        let value = match self.family {
            Family::Siglip | Family::Clip => self.single(
                "embeddings.position_embedding.weight",
                vec![tokens, self.d],
                ParameterRole::PositionEmbedding,
            )?,
            Family::Vit | Family::Dinov2 => self.single(
                "embeddings.position_embeddings",
                vec![1, tokens, self.d],
                ParameterRole::PositionEmbedding,
            )?,
        };
        let from_side = config
            .position_image_size
            .map_or(config.patches_per_side(), |s| s / config.patch_size);
        if from_side != config.patches_per_side() {
            if let Some(spec) = self.params.last_mut() {
                spec.resample = Some(PositionResample {
                    class_rows: usize::from(self.family.has_class_token()),
                    from_side,
                    to_side: config.patches_per_side(),
                });
            }
        }
        Ok(value)
    }

    /// `name.{weight,bias}` LayerNorm of `x`, labelled `name`.
    fn final_norm(&mut self, name: &str, x: ValueId) -> Result<ValueId, IrError> {
        let w = self.single(
            &format!("{name}.weight"),
            vec![self.d],
            ParameterRole::NormScale,
        )?;
        let b = self.single(
            &format!("{name}.bias"),
            vec![self.d],
            ParameterRole::NormBias,
        )?;
        let y = self.b.layer_norm(x, w, b, self.eps)?;
        self.b.label(y, name)
    }

    /// Token 0 of every image: `[B, T, D]` → `[B, D]`.
    fn class_row(&mut self, x: ValueId, batch: usize) -> Result<ValueId, IrError> {
        let y = self.slice_named(x, 1, 0, 1, "head.class_token")?;
        let y = self.b.reshape(y, [batch, self.d])?;
        self.b.label(y, "head.class_token.rows")
    }

    /// HF `ViTPooler`: `tanh(dense(class token))`.
    fn vit_pooler(&mut self, hidden: ValueId, batch: usize) -> Result<ValueId, IrError> {
        let w = self.single(
            "pooler.dense.weight",
            vec![self.d, self.d],
            ParameterRole::GemmWeight,
        )?;
        let b = self.single("pooler.dense.bias", vec![self.d], ParameterRole::GemmBias)?;
        let cls = self.class_row(hidden, batch)?;
        let y = self.linear(cls, w, b, "pooler.dense")?;
        let y = self.b.activation(y, Activation::Tanh)?;
        self.b.label(y, "pooler.activation")
    }

    /// A run-once parameter `<prefix><suffix>`.
    fn single(
        &mut self,
        suffix: &str,
        shape: Vec<usize>,
        role: ParameterRole,
    ) -> Result<ValueId, IrError> {
        let name = self.family.tower_name(suffix);
        let dtype = self.dtype_for(role);
        let value = self
            .b
            .parameter(&name, TensorType::new(dtype, shape.clone()))?;
        self.params.push(ParameterSpec {
            name: name.clone(),
            shape,
            dtype,
            value,
            role,
            layer: None,
            pattern: None,
            sources: vec![name],
            resample: None,
            pad: None,
        });
        Ok(value)
    }

    /// A run-once parameter of `shape`, stored as `stored` and padded with
    /// zeros when bound (see [`ZeroPad`]).
    fn padded(
        &mut self,
        suffix: &str,
        shape: Vec<usize>,
        stored: Vec<usize>,
        role: ParameterRole,
    ) -> Result<ValueId, IrError> {
        let value = self.single(suffix, shape.clone(), role)?;
        if shape != stored {
            if let Some(spec) = self.params.last_mut() {
                spec.pad = Some(ZeroPad { stored });
            }
        }
        Ok(value)
    }

    /// `x · wᵀ + b` (PyTorch Linear); the matmul is labelled `name`, the
    /// bias add `name.bias`. With FP8 weights and an FP8 GEMM input type,
    /// `x` is cast to it first (an FP8 × FP8 product into FP16 partials).
    fn linear(
        &mut self,
        x: ValueId,
        w: ValueId,
        bias: ValueId,
        name: &str,
    ) -> Result<ValueId, IrError> {
        let input = self.gemm_input;
        self.linear_with(x, w, bias, name, input)
    }

    /// [`Self::linear`] with the GEMM input type given (`None`: `x` as is).
    fn linear_with(
        &mut self,
        x: ValueId,
        w: ValueId,
        bias: ValueId,
        name: &str,
        input: Option<DType>,
    ) -> Result<ValueId, IrError> {
        let x = match self.fp8_input_type(input, w)? {
            Some(dtype) => self.fp8_input(x, dtype, name)?,
            None => x,
        };
        let y = self.b.matmul_transposed(x, w, self.act)?;
        self.b.label(y, name)?;
        let y = self.b.add(y, bias)?;
        self.b.label(y, &format!("{name}.bias"))
    }

    fn layer_slots(&self, f: usize, fuse_qkv: bool) -> Vec<LayerSlot> {
        use ParameterRole::*;
        let d = self.d;
        let n = self.family.layer_names();
        let slot = |suffix: String, shape: Vec<usize>, role| LayerSlot {
            parts: vec![suffix.clone()],
            suffix,
            shape,
            role,
            pad: None,
        };
        // The MLP's width padded to whole words (see `mlp_width`).
        let fp = mlp_width(f);
        let padded = |suffix: String, shape: Vec<usize>, stored: Vec<usize>, role| LayerSlot {
            pad: (shape != stored).then_some(ZeroPad { stored }),
            ..slot(suffix, shape, role)
        };
        let (w, b) = (
            |stem: &str| format!("{stem}.weight"),
            |stem: &str| format!("{stem}.bias"),
        );
        let mut slots = vec![
            slot(w(n.norm1), vec![d], NormScale),
            slot(b(n.norm1), vec![d], NormBias),
        ];
        if fuse_qkv {
            slots.push(LayerSlot {
                suffix: w(n.qkv),
                shape: vec![3 * d, d],
                role: GemmWeight,
                parts: vec![w(n.q), w(n.k), w(n.v)],
                pad: None,
            });
            slots.push(LayerSlot {
                suffix: b(n.qkv),
                shape: vec![3 * d],
                role: GemmBias,
                parts: vec![b(n.q), b(n.k), b(n.v)],
                pad: None,
            });
        } else {
            for stem in [n.q, n.k, n.v] {
                slots.push(slot(w(stem), vec![d, d], GemmWeight));
                slots.push(slot(b(stem), vec![d], GemmBias));
            }
        }
        slots.extend([
            slot(w(n.out), vec![d, d], GemmWeight),
            slot(b(n.out), vec![d], GemmBias),
            slot(w(n.norm2), vec![d], NormScale),
            slot(b(n.norm2), vec![d], NormBias),
            padded(w(n.fc1), vec![fp, d], vec![f, d], GemmWeight),
            padded(b(n.fc1), vec![fp], vec![f], GemmBias),
            padded(w(n.fc2), vec![d, fp], vec![d, f], GemmWeight),
            slot(b(n.fc2), vec![d], GemmBias),
        ]);
        // LayerScale last, so every other slot keeps SigLIP's position.
        if let Some((scale1, scale2)) = n.scales {
            slots.push(slot(scale1.to_string(), vec![d], LayerScale));
            slots.push(slot(scale2.to_string(), vec![d], LayerScale));
        }
        slots
    }

    /// Per-layer parameters (layer-major), then the Repeat over them.
    fn encoder(
        &mut self,
        config: &VisionConfig,
        fuse_qkv: bool,
        layers: usize,
        x: ValueId,
    ) -> Result<(OpId, ValueId), IrError> {
        let slots = self.layer_slots(config.intermediate_size, fuse_qkv);
        let mut sequences: Vec<Vec<ValueId>> = vec![Vec::with_capacity(layers); slots.len()];
        for layer in 0..layers {
            for (slot, seq) in slots.iter().zip(&mut sequences) {
                let pattern = self.family.layer_pattern(&slot.suffix);
                let name = layer_name(&pattern, layer);
                let dtype = self.dtype_for(slot.role);
                let value = self
                    .b
                    .parameter(&name, TensorType::new(dtype, slot.shape.clone()))?;
                seq.push(value);
                self.params.push(ParameterSpec {
                    name,
                    shape: slot.shape.clone(),
                    dtype,
                    value,
                    role: slot.role,
                    layer: Some(layer),
                    pattern: Some(pattern),
                    sources: slot
                        .parts
                        .iter()
                        .map(|part| layer_name(&self.family.layer_pattern(part), layer))
                        .collect(),
                    resample: None,
                    pad: slot.pad.clone(),
                });
            }
        }
        // `layers` ≤ config layers, checked by the caller; it fits u32 for any real config.
        let trip = u32::try_from(layers).unwrap_or(u32::MAX);
        let repeat = self.b.begin_repeat(trip)?;
        let h = self.b.carried(&repeat, x)?;
        let mut args = Vec::with_capacity(slots.len());
        for seq in &sequences {
            args.push(self.b.iterated(&repeat, seq)?);
        }
        let args = LayerArgs(args);
        let layer_scale = self
            .family
            .layer_names()
            .scales
            .map(|_| (args.get(slots.len() - 2), args.get(slots.len() - 1)));
        let y = self.layer(&args, fuse_qkv, layer_scale, h)?;
        let results = self.b.end_repeat(&repeat, &[y])?;
        let out = self.b.label(results[0], "encoder")?;
        match self.b.graph().value(out).map(|v| v.def()) {
            Some(ValueDef::Result { op, .. }) => Ok((op, out)),
            _ => Err(IrError::UnknownValue {
                op: None,
                value: out,
            }),
        }
    }

    /// One pre-LN encoder layer (HF `SiglipEncoderLayer`, `CLIPEncoderLayer`,
    /// `ViTLayer`; `Dinov2Layer` with `layer_scale` = (λ1, λ2) multiplying
    /// each branch before its residual add).
    fn layer(
        &mut self,
        a: &LayerArgs,
        fuse_qkv: bool,
        layer_scale: Option<(ValueId, ValueId)>,
        h: ValueId,
    ) -> Result<ValueId, IrError> {
        let d = self.d;
        // Every projection's weight has one type; the first stands for all.
        let n1 = self.layer_norm_for_gemm(
            h,
            [a.get(0), a.get(1)],
            a.get(2),
            &format!("{LAYER}.layer_norm1"),
        )?;
        let (q, k, v, next) = if fuse_qkv {
            let qkv = self.linear(
                n1,
                a.get(2),
                a.get(3),
                &format!("{LAYER}.self_attn.qkv_proj"),
            )?;
            let q = self.slice_named(qkv, 2, 0, d, &format!("{LAYER}.self_attn.q"))?;
            let k = self.slice_named(qkv, 2, d, 2 * d, &format!("{LAYER}.self_attn.k"))?;
            let v = self.slice_named(qkv, 2, 2 * d, 3 * d, &format!("{LAYER}.self_attn.v"))?;
            (q, k, v, 4)
        } else {
            let q = self.linear(n1, a.get(2), a.get(3), &format!("{LAYER}.self_attn.q_proj"))?;
            let k = self.linear(n1, a.get(4), a.get(5), &format!("{LAYER}.self_attn.k_proj"))?;
            let v = self.linear(n1, a.get(6), a.get(7), &format!("{LAYER}.self_attn.v_proj"))?;
            (q, k, v, 8)
        };
        let attn = self.attention(q, k, v, &format!("{LAYER}.self_attn"))?;
        let o = self.linear(
            attn,
            a.get(next),
            a.get(next + 1),
            &format!("{LAYER}.self_attn.out_proj"),
        )?;
        let o = match layer_scale {
            Some((lambda1, _)) => {
                let y = self.b.mul(o, lambda1)?;
                self.b.label(y, &format!("{LAYER}.layer_scale1"))?
            }
            None => o,
        };
        let h = self.b.add(h, o)?;
        self.b.label(h, &format!("{LAYER}.residual_attn"))?;
        let n2 = self.layer_norm_for_gemm(
            h,
            [a.get(next + 2), a.get(next + 3)],
            a.get(next + 4),
            &format!("{LAYER}.layer_norm2"),
        )?;
        let mlp_params = [
            a.get(next + 4),
            a.get(next + 5),
            a.get(next + 6),
            a.get(next + 7),
        ];
        let mlp = self.mlp(n2, mlp_params, &format!("{LAYER}.mlp"))?;
        let mlp = match layer_scale {
            Some((_, lambda2)) => {
                let y = self.b.mul(mlp, lambda2)?;
                self.b.label(y, &format!("{LAYER}.layer_scale2"))?
            }
            None => mlp,
        };
        let y = self.b.add(h, mlp)?;
        self.b.label(y, &format!("{LAYER}.residual_mlp"))
    }

    /// Multi-head attention core: split heads, softmax(q·kᵀ/√Dh)·v in the
    /// attention dtype, merge heads (back in the activation dtype).
    fn attention(
        &mut self,
        q: ValueId,
        k: ValueId,
        v: ValueId,
        prefix: &str,
    ) -> Result<ValueId, IrError> {
        let mut split = [q, k, v];
        for (x, which) in split.iter_mut().zip(["q", "k", "v"]) {
            let heads = self.b.split_heads(*x, self.heads)?;
            self.b.label(heads, &format!("{prefix}.split_{which}"))?;
            *x = self.cast_to(heads, self.attn)?;
        }
        let out = self.b.attention(split[0], split[1], split[2])?;
        self.b.label(out, &format!("{prefix}.attention"))?;
        let out = self.cast_to(out, self.act)?;
        let merged = self.b.merge_heads(out)?;
        self.b.label(merged, &format!("{prefix}.merge_heads"))
    }

    /// fc1 → the config's activation → fc2; `params` = [fc1.w, fc1.b,
    /// fc2.w, fc2.b].
    fn mlp(&mut self, x: ValueId, params: [ValueId; 4], prefix: &str) -> Result<ValueId, IrError> {
        let [w1, b1, w2, b2] = params;
        let y = self.linear(x, w1, b1, &format!("{prefix}.fc1"))?;
        // The cast to fc2's FP8 input, when it reads one, fused into the
        // activation.
        let y = match (self.mlp_act, self.fp8_input_type(self.gemm_input, w2)?) {
            (Some(function), Some(dtype)) => self.b.activation_stored_as(y, function, dtype)?,
            (Some(function), None) => self.b.activation(y, function)?,
            (None, Some(dtype)) => self.b.gelu_tanh_stored_as(y, dtype)?,
            (None, None) => self.b.gelu_tanh(y)?,
        };
        self.b.label(y, &format!("{prefix}.gelu"))?;
        self.linear(y, w2, b2, &format!("{prefix}.fc2"))
    }

    /// HF `SiglipMultiheadAttentionPoolingHead`: the probe attends to the
    /// hidden states through `nn.MultiheadAttention` (packed in_proj rows
    /// [Wq; Wk; Wv]); then `a + MLP(LayerNorm(a))` with no residual from the
    /// probe. Returns `[B, 1, D]`.
    fn map_head(
        &mut self,
        config: &VisionConfig,
        hidden: ValueId,
        batch: usize,
    ) -> Result<ValueId, IrError> {
        use ParameterRole::*;
        let d = self.d;
        let f = config.intermediate_size;
        let probe = self.single("head.probe", vec![1, 1, d], Probe)?;
        let in_w = self.single("head.attention.in_proj_weight", vec![3 * d, d], GemmWeight)?;
        let in_b = self.single("head.attention.in_proj_bias", vec![3 * d], GemmBias)?;
        let out_w = self.single("head.attention.out_proj.weight", vec![d, d], GemmWeight)?;
        let out_b = self.single("head.attention.out_proj.bias", vec![d], GemmBias)?;
        let ln_w = self.single("head.layernorm.weight", vec![d], NormScale)?;
        let ln_b = self.single("head.layernorm.bias", vec![d], NormBias)?;
        let fp = mlp_width(f);
        let fc1_w = self.padded("head.mlp.fc1.weight", vec![fp, d], vec![f, d], GemmWeight)?;
        let fc1_b = self.padded("head.mlp.fc1.bias", vec![fp], vec![f], GemmBias)?;
        let fc2_w = self.padded("head.mlp.fc2.weight", vec![d, fp], vec![d, f], GemmWeight)?;
        let fc2_b = self.single("head.mlp.fc2.bias", vec![d], GemmBias)?;

        // The query comes from the probe alone ([1, 1, D]); it broadcasts
        // over the batch inside attention, as HF's probe.repeat(B, 1, 1).
        let wq = self.slice_named(in_w, 0, 0, d, "head.attention.q_proj.weight")?;
        let bq = self.slice_named(in_b, 0, 0, d, "head.attention.q_proj.bias")?;
        let wkv = self.slice_named(in_w, 0, d, 3 * d, "head.attention.kv_proj.weight")?;
        let bkv = self.slice_named(in_b, 0, d, 3 * d, "head.attention.kv_proj.bias")?;
        let q = self.linear(probe, wq, bq, "head.attention.q_proj")?;
        let q = self.per_image(q, batch, "head.attention.q_proj.expand")?;
        let kv = self.linear(hidden, wkv, bkv, "head.attention.kv_proj")?;
        let k = self.slice_named(kv, 2, 0, d, "head.attention.k")?;
        let v = self.slice_named(kv, 2, d, 2 * d, "head.attention.v")?;
        let attn = self.attention(q, k, v, "head.attention")?;
        let a = self.linear(attn, out_w, out_b, "head.attention.out_proj")?;
        let n = self.b.layer_norm(a, ln_w, ln_b, self.eps)?;
        self.b.label(n, "head.layernorm")?;
        let m = self.mlp(n, [fc1_w, fc1_b, fc2_w, fc2_b], "head.mlp")?;
        let y = self.b.add(a, m)?;
        self.b.label(y, "head.residual")
    }
}
