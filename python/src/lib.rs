//! `ipuc._ipuc`: the native half of the Python package `ipuc` (issue #45).
//! It wraps the host library's entry points (`ipuc::api`), never the CLI
//! binary; `python/python/ipuc/__init__.py` adds the keyword checks and the
//! image conversions, `_ipuc.pyi` the types.
//!
//! Long work (compile, load, simulate, reference) runs on a worker thread
//! while the calling thread waits without the GIL, checking for signals
//! every 100 ms: Ctrl-C raises `KeyboardInterrupt` at once, and the worker
//! stops at its next stage boundary (its result is dropped).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use numpy::ndarray::{ArrayD, IxDyn};
use numpy::{IntoPyArray, PyReadonlyArrayDyn};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use ipuc::api::{self, BoundModel, BuildSpec, ModelFlags, OutputCheck};
use ipuc::device::simulated::LoadedSim;
use ipuc::device::DeviceOutput;
use ipuc::input::preprocess::Rgb8;
use ipuc::input::processor::ImageProcessor as HostProcessor;
use ipuc::input::PixelValues;
use ipuc::model::{LAST_HIDDEN_STATE, POOLER_OUTPUT};
use ipuc_target::ipu21::sram::CLOCK_HZ;

create_exception!(
    _ipuc,
    IpucError,
    PyException,
    "Base class of every ipuc error; `exit_code` is the CLI's exit status for it."
);
create_exception!(
    _ipuc,
    UsageError,
    IpucError,
    "A bad argument or value (CLI exit status 2)."
);
create_exception!(
    _ipuc,
    DoesNotFitError,
    IpucError,
    "The model does not fit the IPU21: a memory rejection by the planner or placement, or a model larger than the C600 (CLI exit status 3)."
);
create_exception!(
    _ipuc,
    BadInputError,
    IpucError,
    "Bad input: an unreadable or unwritable file, a malformed package, checkpoint, config, image or pixel values (CLI exit status 4)."
);
create_exception!(
    _ipuc,
    ValidationFailed,
    IpucError,
    "The run finished but an output is outside the tolerance (CLI exit status 1); `validation` holds the figures."
);
create_exception!(
    _ipuc,
    InternalError,
    IpucError,
    "The compiler or simulator failed on valid input: a bug (CLI exit status 5)."
);

/// The CLI's exit code for `err` as a Python exception of its class,
/// carrying the CLI's message (`what: why: …`).
fn py_error(err: anyhow::Error) -> PyErr {
    let code = ipuc::exit::code_of(&err);
    let message = format!("{err:#}");
    let e = match code {
        ipuc::exit::VALIDATION_FAILED => ValidationFailed::new_err(message),
        ipuc::exit::USAGE => UsageError::new_err(message),
        ipuc::exit::DOES_NOT_FIT => DoesNotFitError::new_err(message),
        ipuc::exit::INTERNAL => InternalError::new_err(message),
        _ => BadInputError::new_err(message),
    };
    Python::attach(|py| {
        let _ = e.value(py).setattr("exit_code", code);
    });
    e
}

/// Set when the caller was interrupted: the worker stops at its next
/// stage boundary.
#[derive(Clone, Default)]
struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// Errors out if the caller has gone (Ctrl-C).
    fn check(&self) -> anyhow::Result<()> {
        if self.0.load(Ordering::Relaxed) {
            anyhow::bail!("interrupted");
        }
        Ok(())
    }
}

/// Worker threads get the stack the CLI's main thread has.
const WORKER_STACK: usize = 64 << 20;

/// Runs `work` on a worker thread; the caller waits without the GIL and
/// checks for signals (Ctrl-C) every 100 ms. A panic is an `InternalError`.
fn interruptible<T, F>(py: Python<'_>, work: F) -> PyResult<T>
where
    T: Send + 'static,
    F: FnOnce(&Cancel) -> anyhow::Result<T> + Send + 'static,
{
    type Slot<T> = (
        Mutex<Option<std::thread::Result<anyhow::Result<T>>>>,
        Condvar,
    );
    let slot: Arc<Slot<T>> = Arc::new((Mutex::new(None), Condvar::new()));
    let cancel = Cancel::default();
    let (worker_slot, worker_cancel) = (slot.clone(), cancel.clone());
    std::thread::Builder::new()
        .name("ipuc".into())
        .stack_size(WORKER_STACK)
        .spawn(move || {
            let result =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(&worker_cancel)));
            let (lock, ready) = &*worker_slot;
            *lock.lock().unwrap_or_else(|e| e.into_inner()) = Some(result);
            ready.notify_all();
        })
        .map_err(|e| InternalError::new_err(format!("starting a worker thread: {e}")))?;
    loop {
        let done = py.detach(|| {
            let (lock, ready) = &*slot;
            let guard = lock.lock().unwrap_or_else(|e| e.into_inner());
            let (mut guard, _) = ready
                .wait_timeout_while(guard, Duration::from_millis(100), |r| r.is_none())
                .unwrap_or_else(|e| e.into_inner());
            guard.take()
        });
        match done {
            Some(Ok(result)) => return result.map_err(py_error),
            Some(Err(panic)) => {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic".into());
                return Err(InternalError::new_err(format!(
                    "internal error (a bug; please report it): {what}"
                )));
            }
            None => {
                if let Err(e) = py.check_signals() {
                    cancel.0.store(true, Ordering::Relaxed);
                    return Err(e);
                }
            }
        }
    }
}

/// Locks a mutex, whatever a panicking holder left (the data are whole
/// values swapped in and out).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A float32 numpy array of `shape`.
fn array<'py>(py: Python<'py>, shape: &[usize], data: Vec<f32>) -> PyResult<Bound<'py, PyAny>> {
    let a = ArrayD::from_shape_vec(IxDyn(shape), data)
        .map_err(|e| InternalError::new_err(format!("output shape {shape:?}: {e}")))?;
    Ok(a.into_pyarray(py).into_any())
}

/// `[N, C, H, W]` float32 pixel values from anything numpy converts
/// (`numpy.asarray(x, dtype=float32)`: a torch tensor on the CPU too).
fn to_pixels(obj: &Bound<'_, PyAny>) -> PyResult<PixelValues> {
    let kwargs = PyDict::new(obj.py());
    kwargs.set_item("dtype", "float32")?;
    let converted = obj
        .py()
        .import("numpy")?
        .call_method("asarray", (obj,), Some(&kwargs))?;
    let pixels: PyReadonlyArrayDyn<'_, f32> = converted.extract()?;
    let a = pixels.as_array();
    let shape = a.shape();
    let [n, c, h, w] = shape else {
        return Err(BadInputError::new_err(format!(
            "pixel_values must have 4 dimensions [N, C, H, W]; it has shape {shape:?}"
        )));
    };
    if *n == 0 {
        return Err(BadInputError::new_err(
            "pixel_values holds no image (N = 0)".to_string(),
        ));
    }
    Ok(PixelValues {
        shape: [*n, *c, *h, *w],
        data: a.iter().copied().collect(),
    })
}

/// A compiled package and what running it needs, shared by the Python
/// objects that refer to it.
struct PackageInner {
    bytes: Vec<u8>,
    package: ipuc_target::package::Package,
    /// What the package says it was compiled from (read and checked).
    description: ipuc_core::description::Description,
    digest: String,
    /// Where the checkpoint is now, when it moved since the compile.
    checkpoint: Option<PathBuf>,
    /// The model and weights: from the compile, or rebuilt from the
    /// description at the first run.
    bound: Mutex<Option<Arc<BoundModel>>>,
    /// The package resident on a simulated device (weights loaded once).
    device: Mutex<Option<LoadedSim>>,
}

impl PackageInner {
    fn bound(&self) -> anyhow::Result<Arc<BoundModel>> {
        if let Some(b) = lock(&self.bound).as_ref() {
            return Ok(b.clone());
        }
        let b = Arc::new(api::package_model(
            &self.package,
            self.checkpoint.as_deref(),
        )?);
        *lock(&self.bound) = Some(b.clone());
        Ok(b)
    }

    fn batch(&self) -> usize {
        self.description
            .model
            .as_ref()
            .map_or(1, |m| m.batch as usize)
    }
}

/// A compiled package: tile programs, exchange rows, bindings and the
/// description of the model it was compiled from. Made by `ipuc.compile`
/// or `ipuc.load`.
#[pyclass(frozen, module = "ipuc")]
struct Package {
    inner: Arc<PackageInner>,
}

#[pymethods]
impl Package {
    /// The package's SHA-256 (hex), the one every `ipuc` command prints:
    /// `head -c -32 model.ipuc | sha256sum`.
    #[getter]
    fn digest(&self) -> String {
        self.inner.digest.clone()
    }

    /// What the package was compiled from (model, weights, numerics,
    /// build flags), as `ipuc inspect --json` shows it.
    #[getter]
    fn description<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let json = api::description_json(&self.inner.description).map_err(py_error)?;
        py.import("json")?.call_method1("loads", (json,))
    }

    /// Images per inference the package was compiled for.
    #[getter]
    fn batch(&self) -> usize {
        self.inner.batch()
    }

    /// Tiles with a program.
    #[getter]
    fn tiles(&self) -> usize {
        self.inner.package.tiles.len()
    }

    /// The package file's bytes.
    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, pyo3::types::PyBytes> {
        pyo3::types::PyBytes::new(py, &self.inner.bytes)
    }

    /// Writes the package file to `path` (atomically: an error leaves the
    /// previous file whole). `ipuc exec PATH` runs it.
    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        let inner = self.inner.clone();
        interruptible(py, move |_| api::write_package(&path, &inner.bytes))
    }

    /// Runs `pixel_values` (`[N, C, H, W]` float32, N the package's batch)
    /// on the simulated IPU21, `inferences` times on the resident package
    /// (weights loaded once, kept for later runs); returns the last
    /// inference's outputs and every inference's simulated cycles.
    #[pyo3(signature = (pixel_values, inferences = 1))]
    fn run(
        &self,
        py: Python<'_>,
        pixel_values: &Bound<'_, PyAny>,
        inferences: u32,
    ) -> PyResult<RunResult> {
        if !(1..=10_000).contains(&inferences) {
            return Err(UsageError::new_err(format!(
                "inferences {inferences} is outside 1..=10000"
            )));
        }
        let pixels = to_pixels(pixel_values)?;
        let inner = self.inner.clone();
        let (pixels, out, cycles) = interruptible(py, move |cancel| {
            let bound = inner.bound()?;
            api::check_pixels(&bound.model, &pixels)?;
            cancel.check()?;
            let taken = lock(&inner.device).take();
            let mut device = match taken {
                Some(d) => d,
                None => api::load_device(&inner.package, &bound.weights)?,
            };
            let mut cycles = Vec::new();
            let mut last = None;
            for _ in 0..inferences {
                if let Err(e) = cancel.check() {
                    // Interrupted between inferences: the device stays
                    // resident for the next run.
                    *lock(&inner.device) = Some(device);
                    return Err(e);
                }
                let out = api::infer(&mut device, &pixels)?;
                cycles.push(out.profile.cycles);
                last = Some(out);
            }
            *lock(&inner.device) = Some(device);
            let out = last.ok_or_else(|| anyhow::anyhow!("no inference ran"))?;
            Ok((pixels, out, cycles))
        })?;
        RunResult::new(py, self.inner.clone(), pixels, out, cycles)
    }

    fn __repr__(&self) -> String {
        let what = self
            .inner
            .description
            .model
            .as_ref()
            .map(ipuc::cli::package_model::summary_line)
            .unwrap_or_else(|| "no model description".into());
        format!(
            "<ipuc.Package {}… {} tiles: {what}>",
            &self.inner.digest[..16],
            self.inner.package.tiles.len()
        )
    }
}

/// What `Package.run` produced: the outputs of the last inference and
/// the simulated cycles (kernel bodies and global sync modelled,
/// everything else simulated instruction by instruction; not a hardware
/// measurement).
#[pyclass(frozen, module = "ipuc", name = "Result")]
struct RunResult {
    inner: Arc<PackageInner>,
    pixels: Arc<PixelValues>,
    out: Arc<DeviceOutput>,
    inference_cycles: Vec<u64>,
    pooler_output: Option<Py<PyAny>>,
    last_hidden_state: Py<PyAny>,
}

impl RunResult {
    fn new(
        py: Python<'_>,
        inner: Arc<PackageInner>,
        pixels: PixelValues,
        out: DeviceOutput,
        inference_cycles: Vec<u64>,
    ) -> PyResult<RunResult> {
        let get = |name: &str| -> PyResult<Option<Py<PyAny>>> {
            out.outputs
                .get(name)
                .map(|t| array(py, &t.shape, t.data.clone()).map(Bound::unbind))
                .transpose()
        };
        let last_hidden_state = get(LAST_HIDDEN_STATE)?.ok_or_else(|| {
            InternalError::new_err("the package has no last_hidden_state output".to_string())
        })?;
        Ok(RunResult {
            pooler_output: get(POOLER_OUTPUT)?,
            last_hidden_state,
            inner,
            pixels: Arc::new(pixels),
            out: Arc::new(out),
            inference_cycles,
        })
    }
}

/// One image's checks as a dict: output name → figures.
fn checks_dict<'py>(py: Python<'py>, checks: &[OutputCheck]) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for c in checks {
        let o = PyDict::new(py);
        o.set_item("max_abs_error", c.max_abs_error)?;
        o.set_item("cosine", c.cosine)?;
        o.set_item("outside", c.outside)?;
        d.set_item(&c.output, o)?;
    }
    Ok(d)
}

#[pymethods]
impl RunResult {
    /// The family's pooled embedding `[N, D]` (SigLIP's MAP head, CLIP's
    /// post-LayerNorm class token, ViT's tanh pooler, DINOv2's class
    /// token), or None for a tower without a pooler.
    #[getter]
    fn pooler_output(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.pooler_output.as_ref().map(|p| p.clone_ref(py))
    }

    /// `[N, tokens, D]` patch features (the family's `last_hidden_state`).
    #[getter]
    fn last_hidden_state(&self, py: Python<'_>) -> Py<PyAny> {
        self.last_hidden_state.clone_ref(py)
    }

    /// Simulated cycles of the last inference (to the last tile's halt).
    #[getter]
    fn cycles(&self) -> u64 {
        self.inference_cycles.last().copied().unwrap_or(0)
    }

    /// Simulated cycles of every inference run, in order.
    #[getter]
    fn inference_cycles(&self) -> Vec<u64> {
        self.inference_cycles.clone()
    }

    /// Images in the batch.
    #[getter]
    fn batch(&self) -> usize {
        self.pixels.batch()
    }

    /// Simulated cycles per image (the last inference's cycles / N).
    #[getter]
    fn cycles_per_image(&self) -> f64 {
        self.cycles() as f64 / self.pixels.batch().max(1) as f64
    }

    /// The IPU21 clock the simulated rates assume: 1.5 GHz.
    #[getter]
    fn clock_hz(&self) -> u64 {
        CLOCK_HZ
    }

    /// Simulated images per second at `clock_hz` (N / (cycles / clock));
    /// a simulation figure, not a hardware measurement.
    #[getter]
    fn images_per_second(&self) -> f64 {
        let c = self.cycles();
        if c == 0 {
            return 0.0;
        }
        self.pixels.batch() as f64 * CLOCK_HZ as f64 / c as f64
    }

    /// Compares the outputs, image by image, with the device-numerics
    /// reference (the graph's own FP16/FP8 casts and the package's K
    /// splits: the PASS criterion of `ipuc run --reference-run`), and with
    /// the FP32 reference when `fp32` (reported, not judged). Raises
    /// `ValidationFailed` (its `validation` attribute holds the figures)
    /// when an element is outside `atol + rtol·|ref|` and `check` is true.
    /// `against="fp32"` judges against the FP32 reference instead.
    #[pyo3(signature = (atol = 0.2, rtol = 0.05, fp32 = true, check = true, against = "device_numerics"))]
    fn validate(
        &self,
        py: Python<'_>,
        atol: f32,
        rtol: f32,
        fp32: bool,
        check: bool,
        against: &str,
    ) -> PyResult<Validation> {
        let judge_fp32 = match against {
            "device_numerics" => false,
            "fp32" => true,
            other => {
                return Err(UsageError::new_err(format!(
                    "against={other:?}: give \"device_numerics\" (the PASS criterion of --reference-run) or \"fp32\""
                )))
            }
        };
        let fp32 = fp32 || judge_fp32;
        for (name, v) in [("atol", atol), ("rtol", rtol)] {
            if !v.is_finite() || v < 0.0 {
                return Err(UsageError::new_err(format!(
                    "{name} {v} must be finite and ≥ 0"
                )));
            }
        }
        let (inner, pixels, out) = (self.inner.clone(), self.pixels.clone(), self.out.clone());
        let (device, reference) = interruptible(py, move |cancel| {
            let bound = inner.bound()?;
            let batch = pixels.batch();
            let r = api::reference(&bound, &pixels, false, Some(&inner.package))?;
            let device = api::compare_images(&out, &r, batch, atol, rtol)?;
            cancel.check()?;
            let fp = if fp32 {
                let r = api::reference(&bound, &pixels, true, None)?;
                Some(api::compare_images(&out, &r, batch, atol, rtol)?)
            } else {
                None
            };
            Ok((device, fp))
        })?;
        let images = PyList::empty(py);
        let mut failed = 0;
        let judged = match (&reference, judge_fp32) {
            (Some(f), true) => f,
            _ => &device,
        };
        let name = if judge_fp32 {
            "FP32"
        } else {
            "device-numerics"
        };
        for (i, d) in judged.iter().enumerate() {
            let passed = d
                .iter()
                .all(|c| c.outside == 0 && c.max_abs_error.is_finite());
            failed += usize::from(!passed);
            let image = PyDict::new(py);
            image.set_item("passed", passed)?;
            image.set_item("device_numerics", checks_dict(py, &device[i])?)?;
            match &reference {
                Some(f) => image.set_item("fp32", checks_dict(py, &f[i])?)?,
                None => image.set_item("fp32", py.None())?,
            }
            images.append(image)?;
        }
        let validation = Validation {
            passed: failed == 0,
            atol,
            rtol,
            images: images.unbind(),
            message: if failed == 0 {
                format!(
                    "PASS: {} images within atol {atol} + rtol {rtol}·|ref| of the {name} reference",
                    device.len()
                )
            } else {
                format!(
                    "reference validation FAILED ({failed} of {} images outside atol {atol} + rtol {rtol}·|ref| of the {name} reference)",
                    device.len()
                )
            },
        };
        if check && !validation.passed {
            let err = ValidationFailed::new_err(validation.message.clone());
            let v = Py::new(py, validation)?;
            err.value(py).setattr("validation", v)?;
            err.value(py)
                .setattr("exit_code", ipuc::exit::VALIDATION_FAILED)?;
            return Err(err);
        }
        Ok(validation)
    }

    fn __repr__(&self) -> String {
        format!(
            "<ipuc.Result {} images, {} simulated cycles ({:.0} images/s at {} GHz, simulated)>",
            self.pixels.batch(),
            self.cycles(),
            self.images_per_second(),
            CLOCK_HZ as f64 / 1e9
        )
    }
}

/// `Result.validate`'s answer.
#[pyclass(frozen, module = "ipuc")]
struct Validation {
    #[pyo3(get)]
    passed: bool,
    #[pyo3(get)]
    atol: f32,
    #[pyo3(get)]
    rtol: f32,
    /// One dict per image: `passed`, `device_numerics` and `fp32` (None
    /// unless asked), each mapping an output name to its `max_abs_error`,
    /// `cosine` and `outside` (elements outside the tolerance).
    #[pyo3(get)]
    images: Py<PyList>,
    /// PASS or FAIL in one line.
    #[pyo3(get)]
    message: String,
}

#[pymethods]
impl Validation {
    fn __bool__(&self) -> bool {
        self.passed
    }

    fn __repr__(&self) -> String {
        format!("<ipuc.Validation {}>", self.message)
    }
}

/// Compiles a model (native half of `ipuc.compile`; see there).
#[pyfunction]
#[pyo3(signature = (
    workload, checkpoint, layers, batch, fp8_scale, fuse_qkv, image_size, seed,
    fp8_activation_scale, fp8_weights_only, planning_beam_width, planning_tiles,
    optimization_steps, exchange_stream_words, outgoing_base, planner_data_budget,
    runtime_source, memory_profile_directory
))]
#[allow(clippy::too_many_arguments)]
fn compile(
    py: Python<'_>,
    workload: Option<String>,
    checkpoint: Option<PathBuf>,
    layers: Option<usize>,
    batch: usize,
    fp8_scale: Option<i8>,
    fuse_qkv: bool,
    image_size: Option<usize>,
    seed: u64,
    fp8_activation_scale: Option<i8>,
    fp8_weights_only: bool,
    planning_beam_width: Option<usize>,
    planning_tiles: Option<u32>,
    optimization_steps: Option<u32>,
    exchange_stream_words: Option<u32>,
    outgoing_base: bool,
    planner_data_budget: Option<u64>,
    runtime_source: Option<PathBuf>,
    memory_profile_directory: Option<PathBuf>,
) -> PyResult<Package> {
    let model = ModelFlags {
        workload,
        checkpoint,
        layers,
        batch,
        fuse_qkv,
        fp8_scale,
        fp8_activation_scale,
        fp8_weights_only,
        image_size,
        seed,
    };
    let defaults = BuildSpec::default();
    let build = BuildSpec {
        beam_width: planning_beam_width.unwrap_or(defaults.beam_width),
        tiles: planning_tiles.unwrap_or(defaults.tiles),
        optimization_steps: optimization_steps.unwrap_or(defaults.optimization_steps),
        exchange_stream_words,
        outgoing_base,
        planner_data_budget,
        runtime_source,
        memory_profile_directory,
    };
    let inner = interruptible(py, move |_| {
        let (bound, compiled) = api::compile(&model, &build)?;
        let package = ipuc_target::package::read(&compiled.bytes)
            .map_err(anyhow::Error::new)
            .map_err(|e| e.context("reading back the package just compiled"))?;
        Ok(PackageInner {
            digest: compiled.report.sha256.clone(),
            bytes: compiled.bytes,
            package,
            description: compiled.description,
            checkpoint: None,
            bound: Mutex::new(Some(Arc::new(bound))),
            device: Mutex::new(None),
        })
    })?;
    Ok(Package {
        inner: Arc::new(inner),
    })
}

/// Reads a package file written by `Package.save` or `ipuc compile
/// --package` (checked as `ipuc exec` checks it). `checkpoint` gives the
/// checkpoint's new place when it moved since the compile (its digest must
/// match).
#[pyfunction]
#[pyo3(signature = (path, checkpoint = None))]
fn load(py: Python<'_>, path: PathBuf, checkpoint: Option<PathBuf>) -> PyResult<Package> {
    let inner = interruptible(py, move |_| {
        let (bytes, package, description, digest) = api::read_package(&path)?;
        Ok(PackageInner {
            bytes,
            package,
            description,
            digest,
            checkpoint,
            bound: Mutex::new(None),
            device: Mutex::new(None),
        })
    })?;
    Ok(Package {
        inner: Arc::new(inner),
    })
}

/// The FP32 reference (native half of `ipuc.reference`).
#[pyfunction]
#[pyo3(signature = (
    pixel_values, workload, checkpoint, layers, fuse_qkv, image_size, seed
))]
#[allow(clippy::too_many_arguments)]
fn reference<'py>(
    py: Python<'py>,
    pixel_values: &Bound<'_, PyAny>,
    workload: Option<String>,
    checkpoint: Option<PathBuf>,
    layers: Option<usize>,
    fuse_qkv: bool,
    image_size: Option<usize>,
    seed: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let pixels = to_pixels(pixel_values)?;
    let model = ModelFlags {
        workload,
        checkpoint,
        layers,
        batch: pixels.batch(),
        fuse_qkv,
        image_size,
        seed,
        ..ModelFlags::default()
    };
    let out = interruptible(py, move |cancel| {
        let bound = api::reference_model(&model)?;
        api::check_pixels(&bound.model, &pixels)?;
        cancel.check()?;
        api::reference(&bound, &pixels, true, None)
    })?;
    let d = PyDict::new(py);
    let t = out.last_hidden_state;
    d.set_item(
        LAST_HIDDEN_STATE,
        array(py, &t.shape, Arc::unwrap_or_clone(t.data))?,
    )?;
    match out.pooler_output {
        Some(t) => d.set_item(
            POOLER_OUTPUT,
            array(py, &t.shape, Arc::unwrap_or_clone(t.data))?,
        )?,
        None => d.set_item(POOLER_OUTPUT, py.None())?,
    }
    Ok(d)
}

/// A checkpoint's image processor, as `ipuc run --image` applies it (the
/// native half of `ipuc.ImageProcessor`).
#[pyclass(frozen, module = "ipuc._ipuc")]
struct NativeProcessor {
    processor: HostProcessor,
    /// The model's `(size, patch)` outputs are cut to, if known.
    model: Option<(usize, usize)>,
}

#[pymethods]
impl NativeProcessor {
    #[staticmethod]
    #[pyo3(signature = (directory, image_size = None))]
    fn from_pretrained(directory: PathBuf, image_size: Option<usize>) -> PyResult<Self> {
        let (processor, model) = api::image_processor(&directory, image_size).map_err(py_error)?;
        Ok(NativeProcessor { processor, model })
    }

    /// One line: class, resize, crop, normalisation.
    fn describe(&self) -> String {
        self.processor.describe()
    }

    /// The `(height, width)` every output has, when fixed.
    #[getter]
    fn size(&self) -> Option<(usize, usize)> {
        match self.model {
            Some((s, _)) => Some((s, s)),
            None => self.processor.nominal_size(),
        }
    }

    /// A PNG or JPEG file, decoded as PIL does: `[3, H, W]` float32.
    fn preprocess_path<'py>(&self, py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyAny>> {
        let (processor, model) = (self.processor.clone(), self.model);
        let (h, w, data) = interruptible(py, move |_| {
            let img = api::decode_image(&path)?;
            api::preprocess(
                &processor,
                model,
                &img,
                &format!("image {}", path.display()),
            )
        })?;
        array(py, &[3, h, w], data)
    }

    /// An RGB image as `[H, W, 3]` uint8: `[3, H, W]` float32.
    fn preprocess_rgb<'py>(
        &self,
        py: Python<'py>,
        pixels: PyReadonlyArrayDyn<'_, u8>,
        source: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        let a = pixels.as_array();
        let [height, width, 3] = a.shape() else {
            return Err(BadInputError::new_err(format!(
                "{source}: an RGB image must be [H, W, 3] uint8; this one has shape {:?}",
                a.shape()
            )));
        };
        if *height == 0 || *width == 0 {
            return Err(BadInputError::new_err(format!("{source}: an empty image")));
        }
        let img = Rgb8 {
            width: *width,
            height: *height,
            pixels: a.iter().copied().collect(),
        };
        let (processor, model) = (self.processor.clone(), self.model);
        let (h, w, data) = interruptible(py, move |_| {
            api::preprocess(&processor, model, &img, &source)
        })?;
        array(py, &[3, h, w], data)
    }
}

/// The native module; `ipuc/__init__.py` is the public face.
#[pymodule]
fn _ipuc(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // Report lines (the CLI's stdout) stay quiet in a library; warnings
    // go to stderr, and RUST_LOG=info shows the compiler's stage lines.
    ipuc::output::set_verbosity(ipuc::output::Verbosity::Quiet);
    ipuc::output::init_logging(ipuc::output::Verbosity::Normal);
    let py = m.py();
    m.add("IpucError", py.get_type::<IpucError>())?;
    m.add("UsageError", py.get_type::<UsageError>())?;
    m.add("DoesNotFitError", py.get_type::<DoesNotFitError>())?;
    m.add("BadInputError", py.get_type::<BadInputError>())?;
    m.add("ValidationFailed", py.get_type::<ValidationFailed>())?;
    m.add("InternalError", py.get_type::<InternalError>())?;
    m.add("CLOCK_HZ", CLOCK_HZ)?;
    m.add("VERSION", ipuc::VERSION_LONG)?;
    m.add_class::<Package>()?;
    m.add_class::<RunResult>()?;
    m.add_class::<Validation>()?;
    m.add_class::<NativeProcessor>()?;
    m.add_function(wrap_pyfunction!(compile, m)?)?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(reference, m)?)?;
    Ok(())
}
