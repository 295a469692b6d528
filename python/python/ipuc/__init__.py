"""ipuc from Python: compile vision towers for the Graphcore IPU21 and run
them on ipuc's embedded IPU21 simulator, numpy in, numpy out.

    >>> import ipuc
    >>> package = ipuc.compile(checkpoint="ckpt/", planning_tiles=64)
    >>> pixels = ipuc.ImageProcessor.from_pretrained("ckpt/")(["cat.jpg"])["pixel_values"]
    >>> result = package.run(pixels)
    >>> result.pooler_output.shape, result.cycles
    >>> result.validate()          # PASS against the device-numerics reference

Every cycle figure is *simulated* at the IPU21's clock (``CLOCK_HZ``, 1.5
GHz): supervisor and worker code, exchange rows and patchers are simulated
instruction by instruction, kernel bodies and the global sync latency are
modelled. There is no hardware backend.

Errors are exceptions by class, each carrying the message the ``ipuc`` CLI
prints and its exit status as ``exit_code``: ``UsageError`` (2),
``DoesNotFitError`` (3), ``BadInputError`` (4), ``ValidationFailed`` (1),
``InternalError`` (5), all subclasses of ``IpucError``. Long work releases
the GIL and Ctrl-C interrupts it (``KeyboardInterrupt``).
"""

from __future__ import annotations

import os
from typing import Any, Dict, Iterable, List, Optional, Sequence, Union

import numpy as np

from . import _ipuc
from ._ipuc import (
    CLOCK_HZ,
    BadInputError,
    DoesNotFitError,
    InternalError,
    IpucError,
    Package,
    Result,
    UsageError,
    Validation,
    ValidationFailed,
    load,
)

__all__ = [
    "CLOCK_HZ",
    "BadInputError",
    "DoesNotFitError",
    "ImageProcessor",
    "InternalError",
    "IpucError",
    "Package",
    "Result",
    "UsageError",
    "Validation",
    "ValidationFailed",
    "compile",
    "load",
    "reference",
]

__version__ = _ipuc.VERSION.split(" ")[0]

PathLike = Union[str, "os.PathLike[str]"]

#: The planning options ``compile`` takes as keywords, with ``ipuc compile``'s
#: flag for each.
PLANNING_OPTIONS = {
    "planning_tiles": "--planning-tiles: tiles the planner may use (1..=1472)",
    "planning_beam_width": "--planning-beam-width: width of the planner's beam (1..=1024)",
    "optimization_steps": "--optimization-steps: local-improvement steps after the beam search",
    "exchange_stream_words": "--exchange-stream-words: longest piece one exchange stream carries",
    "outgoing_base": "not --no-outgoing-base: per-iteration $OUTGOING_BASE for uniform moving senders",
    "planner_data_budget": "--planner-data-budget: plan against this per-tile data budget (testing)",
    "runtime_source": "--runtime-source: assemble and link this static runtime (.S)",
    "memory_profile_directory": "--memory-profile-directory: the memory map, and rejection reports",
    "seed": "--seed: seed of random weights (presets)",
    "fp8_activation_scale": "--fp8-activation-scale: F143 scale of FP8 GEMM activations",
    "fp8_weights_only": "--fp8-weights-only: FP8 weights, FP16 activations",
}


def _path(p: Optional[PathLike]) -> Optional[str]:
    return None if p is None else os.fspath(p)


def compile(
    workload: Optional[str] = None,
    *,
    checkpoint: Optional[PathLike] = None,
    layers: Optional[int] = None,
    batch: int = 1,
    fp8_scale: Optional[int] = None,
    fuse_qkv: bool = True,
    image_size: Optional[int] = None,
    **planning: Any,
) -> Package:
    """Compile a vision tower into a package, as ``ipuc compile`` does.

    Give either ``workload`` (a preset: ``siglip-small``, ``siglip-so400m``,
    ``clip-vit-l14-336``, ``vit-b16-224``, ``dinov2-l14-224``; random
    weights from ``seed``) or ``checkpoint`` (a Hugging Face directory with
    ``config.json`` and ``model.safetensors``).

    - ``layers``: encoder layers to build (default: all of the config's).
    - ``batch``: images per inference (the device compiler refuses what it
      does not support yet, with a ``UsageError``).
    - ``fp8_scale``: store GEMM weights as FP8 F143 at this power-of-two
      scale (GEMM activations FP8 too unless ``fp8_weights_only``); None
      keeps FP16.
    - ``fuse_qkv``: one fused QKV projection per layer.
    - ``image_size``: run at another size than the config's (the position
      table is interpolated bicubically, as transformers'
      ``interpolate_pos_encoding=True``).
    - ``**planning``: ``planning_tiles``, ``planning_beam_width``,
      ``optimization_steps``, ``exchange_stream_words``, ``outgoing_base``,
      ``planner_data_budget``, ``runtime_source``,
      ``memory_profile_directory``, and the model options ``seed``,
      ``fp8_activation_scale``, ``fp8_weights_only`` (see
      ``PLANNING_OPTIONS``).

    A memory rejection raises ``DoesNotFitError`` naming its reports,
    written to ``memory_profile_directory`` (a new temporary directory when
    not given, removed again after a successful compile).
    """
    unknown = sorted(set(planning) - set(PLANNING_OPTIONS))
    if unknown:
        raise UsageError(
            "unknown option%s %s; compile takes %s"
            % ("s" if len(unknown) > 1 else "", ", ".join(unknown), ", ".join(PLANNING_OPTIONS))
        )
    reports = planning.get("memory_profile_directory")
    temporary = None
    if reports is None:
        import tempfile

        temporary = tempfile.mkdtemp(prefix="ipuc-memory-")
        reports = temporary
    try:
        package = _ipuc.compile(
            workload,
            _path(checkpoint),
            layers,
            batch,
            fp8_scale,
            fuse_qkv,
            image_size,
            planning.get("seed", 0),
            planning.get("fp8_activation_scale"),
            planning.get("fp8_weights_only", False),
            planning.get("planning_beam_width"),
            planning.get("planning_tiles"),
            planning.get("optimization_steps"),
            planning.get("exchange_stream_words"),
            planning.get("outgoing_base", True),
            planning.get("planner_data_budget"),
            _path(planning.get("runtime_source")),
            _path(reports),
        )
    except DoesNotFitError:
        # The rejection's reports stay where the message says.
        raise
    except BaseException:
        if temporary is not None:
            import shutil

            shutil.rmtree(temporary, ignore_errors=True)
        raise
    if temporary is not None:
        import shutil

        shutil.rmtree(temporary, ignore_errors=True)
    return package


def reference(
    pixel_values: Any,
    *,
    checkpoint: Optional[PathLike] = None,
    workload: Optional[str] = None,
    layers: Optional[int] = None,
    fuse_qkv: bool = True,
    image_size: Optional[int] = None,
    seed: int = 0,
) -> Dict[str, Optional[np.ndarray]]:
    """The FP32 reference forward pass (``ipuc reference``), no compile.

    ``pixel_values`` is ``[N, C, H, W]`` float32 (anything numpy converts).
    Returns ``{"last_hidden_state": [N, tokens, D], "pooler_output": [N, D]
    or None}`` as numpy float32, the family's outputs as transformers
    computes them.
    """
    pixels = np.ascontiguousarray(pixel_values, dtype=np.float32)
    return _ipuc.reference(
        pixels, workload, _path(checkpoint), layers, fuse_qkv, image_size, seed
    )


ImageInput = Union[PathLike, np.ndarray, Any]


def _to_rgb(image: Any) -> np.ndarray:
    """A PIL image as transformers' processors make it RGB: anything but
    plain RGB (other modes, an RGB image with a transparent colour)
    converted to RGBA and composited onto white."""
    from PIL import Image

    if image.mode != "RGB" or "transparency" in image.info:
        rgba = image.convert("RGBA")
        background = Image.new("RGBA", rgba.size, (255, 255, 255))
        image = Image.alpha_composite(background, rgba).convert("RGB")
    return np.asarray(image, dtype=np.uint8)


def _array_to_hwc(array: np.ndarray, source: str) -> np.ndarray:
    if array.dtype != np.uint8:
        raise BadInputError(
            "%s: an image array must be uint8 (as PIL gives it); this one is %s"
            % (source, array.dtype)
        )
    if array.ndim == 2:
        array = np.repeat(array[:, :, None], 3, axis=2)
    elif array.ndim == 3 and array.shape[2] != 3 and array.shape[0] == 3:
        array = np.transpose(array, (1, 2, 0))
    if array.ndim != 3 or array.shape[2] != 3:
        raise BadInputError(
            "%s: an image array must be [H, W, 3], [3, H, W] or [H, W] uint8; this one has shape %s"
            % (source, tuple(array.shape))
        )
    return np.ascontiguousarray(array)


class ImageProcessor:
    """A checkpoint's image processor, applied as transformers' PIL backend
    applies it (resize with Pillow's filters bit for bit, centre crop,
    rescale, normalise) — the code ``ipuc run --image`` uses.
    """

    def __init__(self, native: "_ipuc.NativeProcessor") -> None:
        self._native = native

    @classmethod
    def from_pretrained(
        cls, directory: PathLike, *, image_size: Optional[int] = None
    ) -> "ImageProcessor":
        """The processor of checkpoint ``directory``: its
        ``preprocessor_config.json`` (the family's default, with a warning,
        when it has none). With the checkpoint's ``config.json`` beside it,
        outputs are sized for the model (``image_size``, else the config's)
        as ``--image`` sizes them; a directory holding only
        ``preprocessor_config.json`` gives what the file says.
        """
        return cls(_ipuc.NativeProcessor.from_pretrained(os.fspath(directory), image_size))

    @property
    def size(self) -> Optional[tuple]:
        """``(height, width)`` of every output, when fixed."""
        return self._native.size

    def describe(self) -> str:
        """One line: class, resize, crop, normalisation."""
        return self._native.describe()

    def preprocess(self, image: ImageInput) -> np.ndarray:
        """One image (a path, a PIL image, or a uint8 array ``[H, W, 3]``,
        ``[3, H, W]`` or ``[H, W]``) as ``[3, H, W]`` float32."""
        if isinstance(image, (str, os.PathLike)):
            return self._native.preprocess_path(os.fspath(image))
        if isinstance(image, np.ndarray):
            return self._native.preprocess_rgb(_array_to_hwc(image, "image array"), "image array")
        if hasattr(image, "convert") and hasattr(image, "mode"):
            return self._native.preprocess_rgb(_to_rgb(image), "PIL image")
        raise BadInputError(
            "an image must be a path, a PIL image or a uint8 numpy array; got %s"
            % type(image).__name__
        )

    def __call__(
        self, images: Union[ImageInput, Sequence[ImageInput]], return_tensors: Optional[str] = "np"
    ) -> Dict[str, np.ndarray]:
        """``{"pixel_values": [N, 3, H, W] float32}`` for one image or a
        list, as transformers' processors return them."""
        if return_tensors not in (None, "np"):
            raise UsageError("return_tensors=%r: ipuc returns numpy arrays ('np')" % (return_tensors,))
        if isinstance(images, (list, tuple)):
            batch: List[np.ndarray] = [self.preprocess(i) for i in images]
        else:
            batch = [self.preprocess(images)]
        if not batch:
            raise BadInputError("no images given")
        shapes = {b.shape for b in batch}
        if len(shapes) > 1:
            raise BadInputError(
                "the processor made images of different sizes %s; they cannot be stacked"
                % sorted(shapes)
            )
        return {"pixel_values": np.stack(batch).astype(np.float32, copy=False)}

    def __repr__(self) -> str:
        return "<ipuc.ImageProcessor %s>" % self.describe()
