"""Types of the native module ``ipuc._ipuc`` (see ``ipuc`` for the public API)."""

from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import numpy.typing as npt

CLOCK_HZ: int
VERSION: str

class IpucError(Exception):
    """Base class of every ipuc error."""

    exit_code: int

class UsageError(IpucError): ...
class DoesNotFitError(IpucError): ...
class BadInputError(IpucError): ...

class ValidationFailed(IpucError):
    validation: "Validation"

class InternalError(IpucError): ...

class Package:
    """A compiled package (``ipuc.compile`` or ``ipuc.load``)."""

    @property
    def digest(self) -> str:
        """SHA-256 (hex) of the package, as every ``ipuc`` command prints it."""
    @property
    def description(self) -> Dict[str, Any]:
        """What the package was compiled from (``ipuc inspect --json``'s view)."""
    @property
    def batch(self) -> int: ...
    @property
    def tiles(self) -> int: ...
    def to_bytes(self) -> bytes: ...
    def save(self, path: str) -> None:
        """Write the package file atomically; ``ipuc exec PATH`` runs it."""
    def run(self, pixel_values: npt.ArrayLike, inferences: int = 1) -> "Result":
        """Run ``[N, C, H, W]`` float32 pixel values on the simulated IPU21."""

class Result:
    """Outputs of the last inference and simulated cycles."""

    @property
    def pooler_output(self) -> Optional[npt.NDArray[np.float32]]: ...
    @property
    def last_hidden_state(self) -> npt.NDArray[np.float32]: ...
    @property
    def cycles(self) -> int:
        """Simulated cycles of the last inference."""
    @property
    def inference_cycles(self) -> List[int]: ...
    @property
    def batch(self) -> int: ...
    @property
    def cycles_per_image(self) -> float: ...
    @property
    def clock_hz(self) -> int:
        """1.5 GHz: the clock simulated cycles convert to seconds at."""
    @property
    def images_per_second(self) -> float:
        """Simulated images per second at ``clock_hz`` (not a hardware figure)."""
    def validate(
        self,
        atol: float = 0.2,
        rtol: float = 0.05,
        fp32: bool = True,
        check: bool = True,
        against: str = "device_numerics",
    ) -> "Validation":
        """Per-image errors and cosines against the device-numerics (and FP32) reference."""

class Validation:
    passed: bool
    atol: float
    rtol: float
    images: List[Dict[str, Any]]
    message: str
    def __bool__(self) -> bool: ...

class NativeProcessor:
    @staticmethod
    def from_pretrained(directory: str, image_size: Optional[int] = None) -> "NativeProcessor": ...
    def describe(self) -> str: ...
    @property
    def size(self) -> Optional[Tuple[int, int]]: ...
    def preprocess_path(self, path: str) -> npt.NDArray[np.float32]: ...
    def preprocess_rgb(self, pixels: npt.NDArray[np.uint8], source: str) -> npt.NDArray[np.float32]: ...

def compile(
    workload: Optional[str],
    checkpoint: Optional[str],
    layers: Optional[int],
    batch: int,
    fp8_scale: Optional[int],
    fuse_qkv: bool,
    image_size: Optional[int],
    seed: int,
    fp8_activation_scale: Optional[int],
    fp8_weights_only: bool,
    planning_beam_width: Optional[int],
    planning_tiles: Optional[int],
    optimization_steps: Optional[int],
    exchange_stream_words: Optional[int],
    outgoing_base: bool,
    planner_data_budget: Optional[int],
    runtime_source: Optional[str],
    memory_profile_directory: Optional[str],
) -> Package: ...
def load(path: str, checkpoint: Optional[str] = None) -> Package:
    """Read a package file (checked as ``ipuc exec`` checks it)."""

def reference(
    pixel_values: npt.NDArray[np.float32],
    workload: Optional[str],
    checkpoint: Optional[str],
    layers: Optional[int],
    fuse_qkv: bool,
    image_size: Optional[int],
    seed: int,
) -> Dict[str, Optional[npt.NDArray[np.float32]]]: ...
