#!/usr/bin/env python3
"""Regenerates the committed seed corpora in fuzz/seeds/<target>/ from real
artifacts: a real package (give its path; `ipuc compile --workload
siglip-small --vit-layers 1 --planning-tiles 4 --package P`), the HF fixture
checkpoints, configs and .npy files. (The static runtime is a live seed:
`cargo xtask fuzz` copies it from target-ipu21/device-asm/ at each run.)

    python3 fuzz/make_seeds.py P
"""
import hashlib, json, os, struct, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEEDS = os.path.join(ROOT, "fuzz", "seeds")
FIX = os.path.join(ROOT, "tests", "fixtures", "siglip")


def put(target, name, data):
    d = os.path.join(SEEDS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def empty_package_body():
    b = b"IPUCPKG\0" + struct.pack("<HH", 3, 0)
    prod = b"ipuc-seed"
    target = struct.pack("<I", len(prod)) + prod + struct.pack(
        "<IIIIIQ", 1472, 0x4C000, 0x9C000, 0x80000, 0xE7BB0, 1_500_000_000)
    bodies = [target, struct.pack("<I", 0), struct.pack("<I", 0), struct.pack("<I", 0),
              struct.pack("<I", 0), struct.pack("<II", 0, 0), struct.pack("<I", 0),
              # description v1: no build flags, no model
              struct.pack("<HBB", 1, 0, 0)]
    for tag, body in enumerate(bodies, start=1):
        b += struct.pack("<IQ", tag, len(body)) + body
    return b


def segments(pkg):
    """(role, data) of every segment in a package's tiles section."""
    pos = 12
    tag, length = struct.unpack_from("<IQ", pkg, pos)
    pos += 12 + length  # target
    tag, length = struct.unpack_from("<IQ", pkg, pos)
    pos += 12
    (ntiles,) = struct.unpack_from("<I", pkg, pos)
    pos += 4
    out = []
    for _ in range(ntiles):
        _, _, nseg = struct.unpack_from("<III", pkg, pos)
        pos += 12
        for _ in range(nseg):
            _, _, _, role, _, n = struct.unpack_from("<IIBBHI", pkg, pos)
            pos += 16
            out.append((role, pkg[pos:pos + n]))
            pos += n
    return out


def main(package_path):
    pkg = open(package_path, "rb").read()
    body = pkg[:-32]
    assert hashlib.sha256(body).digest() == pkg[-32:], "not a sealed v3 package"
    # package_read seals its input: seeds are package bodies.
    put("package_read", "siglip-small-1layer-4tiles.body", body)
    put("package_read", "empty.body", empty_package_body())
    segs = segments(pkg)
    code = [d for r, d in segs if r in (0, 1)]
    rows = [d for r, d in segs if r == 2]
    for i, d in enumerate(code[:3]):
        put("decode", f"code{i}.bin", d[:8192])
    for i, d in enumerate(rows[:4]):
        put("row_decode", f"rows{i}.bin", d[:4096])
    # The static runtime is not copied here: `cargo xtask fuzz` puts the
    # current target-ipu21/device-asm/static_runtime.S into the corpus before each run.
    put("assemble", "small.S", b"start:\n setzi $m0, start\n br $m0\n.worker\nw: get $m1, $WSR\n bri start\n"
        b".data\n.p2align 3\nx: .long 1, 2, (3 << 4) + 1\n.space 16, 0xff\n")
    for fx in sorted(os.listdir(FIX)):
        d = os.path.join(FIX, fx)
        if not os.path.isdir(d):
            continue
        if os.path.exists(os.path.join(d, "config.json")):
            put("config_load", f"{fx}.json", open(os.path.join(d, "config.json"), "rb").read())
        st = os.path.join(d, "model.safetensors")
        if os.path.exists(st):
            data = open(st, "rb").read()
            (n,) = struct.unpack_from("<Q", data, 0)
            put("checkpoint_load", f"{fx}.header-only.safetensors", data[:8 + n])
            if fx == "vision-f16":
                put("checkpoint_load", f"{fx}.safetensors", data)
        for name in sorted(os.listdir(d)):
            if name.endswith(".npy"):
                put("npy_read", f"{fx}-{name}", open(os.path.join(d, name), "rb").read())
    put("config_load", "so400m.json", json.dumps({
        "hidden_size": 1152, "intermediate_size": 4304, "num_hidden_layers": 27,
        "num_attention_heads": 16, "image_size": 378, "patch_size": 14}).encode())
    # Byte-driven targets: a few fixed programs.
    for t in ("ir_verify", "phase_schedule", "placement"):
        for i in range(3):
            put(t, f"seed{i}", hashlib.sha256(f"{t}{i}".encode()).digest() * (1 + 4 * i))


if __name__ == "__main__":
    main(sys.argv[1])
