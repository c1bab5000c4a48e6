#!/usr/bin/env python3
"""Writes PyTorch checkpoints exactly as torch.save lays them out, without torch.

torch.save pickles the object with Python's own pickle module (protocol 2), storages as persistent ids
('storage', torch.<Type>Storage, key, location, numel), tensors as torch._utils._rebuild_tensor_v2(storage,
offset, size, stride, requires_grad, OrderedDict()), and stores data.pkl, byteorder, data/<key> and version in a
zip archive under "archive/". This script does the same with stand-ins for the torch names (modules registered
under their real names, so that pickle writes the same GLOBAL opcodes), so the bytes of data.pkl are those
torch.save writes: SETITEM for one-item dicts, OrderedDict with _metadata, memoised globals, shared storages.

  make_checkpoints.py corpus OUTDIR                    small checkpoints of every layout + OUTDIR/manifest.json
  make_checkpoints.py from-safetensors IN OUT LAYOUT   a safetensors file as a checkpoint (LAYOUT: plain, nested,
                                                       lightning)
  make_checkpoints.py fuzz-seeds OUTDIR                the seeds of OUTDIR/checkpoint and OUTDIR/pickle
  make_checkpoints.py torch-save IN OUT LAYOUT         like from-safetensors, with the real torch.save (PyTorch)

Used by tests/core/checkpoint_test.cpp and tests/gpu/locotrack_model_test.cpp, and for the fuzz seeds.
"""
import argparse
import array
import collections
import io
import json
import math
import os
import pathlib
import pickle
import struct
import sys
import types
import zipfile

# ---- stand-ins for the torch names that torch.save's pickles refer to -------------------------------------------
torch = types.ModuleType("torch")
torch_utils = types.ModuleType("torch._utils")
sys.modules["torch"] = torch
sys.modules["torch._utils"] = torch_utils
torch._utils = torch_utils


def _named(module, name, obj):
    obj.__module__ = module.__name__
    obj.__qualname__ = name
    obj.__name__ = name
    setattr(module, name, obj)
    return obj


def _rebuild_tensor_v2(*args):
    raise RuntimeError("stand-in")


def _rebuild_parameter(*args):
    raise RuntimeError("stand-in")


_named(torch_utils, "_rebuild_tensor_v2", _rebuild_tensor_v2)
_named(torch_utils, "_rebuild_parameter", _rebuild_parameter)

# dtype name -> (storage type, struct format, element size)
DTYPES = {
    "F32": ("FloatStorage", "<f", 4),
    "F64": ("DoubleStorage", "<d", 8),
    "F16": ("HalfStorage", "<e", 2),
    "BF16": ("BFloat16Storage", None, 2),
    "I64": ("LongStorage", "<q", 8),
    "I32": ("IntStorage", "<i", 4),
    "U8": ("ByteStorage", "<B", 1),
    "BOOL": ("BoolStorage", "<?", 1),
}
STORAGE_TYPES = {}
for _dtype, (_storage, _, _) in DTYPES.items():
    STORAGE_TYPES[_dtype] = _named(torch, _storage, type(_storage, (), {}))


class Device:
    """torch.device pickles as torch.device('cuda', 0)."""

    def __init__(self, kind, index=None):
        self.kind, self.index = kind, index

    def __reduce__(self):
        return (Device, (self.kind, self.index) if self.index is not None else (self.kind,))


_named(torch, "device", Device)

for _package in ("lightning", "lightning.pytorch", "lightning.pytorch.utilities"):
    sys.modules[_package] = types.ModuleType(_package)
lightning = types.ModuleType("lightning.pytorch.utilities.parsing")
sys.modules["lightning.pytorch.utilities.parsing"] = lightning


class AttributeDict(dict):
    pass


_named(lightning, "AttributeDict", AttributeDict)


ARRAY_CODES = {"F32": "f", "F64": "d", "I64": "q", "I32": "i", "U8": "B"}  # little-endian machines only


def pack(dtype, values):
    if dtype in ARRAY_CODES:
        return array.array(ARRAY_CODES[dtype], values).tobytes()
    if dtype == "BF16":
        return b"".join(struct.pack("<f", v)[2:] for v in values)  # exact for bf16-representable values
    return b"".join(struct.pack(DTYPES[dtype][1], v) for v in values)


class Storage:
    """A storage of `values`, or of `raw` little-endian bytes (large tensors, copied from a safetensors file)."""

    def __init__(self, dtype, values=(), raw=None):
        self.dtype, self.values, self.raw = dtype, list(values), raw
        self.numel = len(raw) // DTYPES[dtype][2] if raw is not None else len(self.values)


class Tensor:
    """A view of a storage: torch.save writes (storage, offset, size, stride) and the storage's bytes."""

    def __init__(self, storage, shape, stride=None, offset=0):
        self.storage, self.shape, self.offset = storage, tuple(shape), offset
        if stride is None:
            stride, step = [], 1
            for size in reversed(shape):
                stride.insert(0, step)
                step *= size
        self.stride = tuple(stride)

    def __reduce_ex__(self, protocol):
        return (_rebuild_tensor_v2, (self.storage, self.offset, self.shape, self.stride, False,
                                     collections.OrderedDict()))

    def logical_values(self):
        """The elements in C order, as the reader must return them."""
        out = []

        def walk(dim, base):
            if dim == len(self.shape):
                out.append(self.storage.values[base])
                return
            for i in range(self.shape[dim]):
                walk(dim + 1, base + i * self.stride[dim])

        if all(s > 0 for s in self.shape):
            walk(0, self.offset)
        return out


def tensor(dtype, shape, values):
    return Tensor(Storage(dtype, values), shape)


def save(obj, path, prefix="archive", byteorder="little", extra=None):
    """torch.save's zip layout."""
    keys = {}
    storages = {}

    def persistent_id(o):
        if isinstance(o, Storage):
            key = keys.setdefault(id(o), str(len(keys)))
            storages[key] = o
            return ("storage", STORAGE_TYPES[o.dtype], key, "cpu", o.numel)
        return None

    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=2)
    pickler.persistent_id = persistent_id
    pickler.dump(obj)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr(f"{prefix}/data.pkl", buffer.getvalue())
        archive.writestr(f"{prefix}/byteorder", byteorder)
        for key in sorted(storages):
            storage = storages[key]
            data = storage.raw if storage.raw is not None else pack(storage.dtype, storage.values)
            archive.writestr(f"{prefix}/data/{key}", data)
        archive.writestr(f"{prefix}/version", "3\n")
        archive.writestr(f"{prefix}/.data/serialization_id", "1234567890")
        for name, data in (extra or {}).items():
            archive.writestr(f"{prefix}/{name}", data)


def state_dict(entries, metadata=True):
    """A module's state_dict(): an OrderedDict with a _metadata attribute (pickled through BUILD)."""
    sd = collections.OrderedDict(entries)
    if metadata:
        sd._metadata = collections.OrderedDict([("", {"version": 1}), ("layer", {"version": 1})])
    return sd


def manifest_entry(name, t, dtype):
    values = t.logical_values()
    if dtype == "BOOL":
        values = [1.0 if v else 0.0 for v in values]
    return {"name": name, "dtype": dtype, "shape": list(t.shape), "values": [float(v) for v in values]}


def corpus(out):
    os.makedirs(out, exist_ok=True)
    manifest = {}

    # Views of one storage: a transposed matrix, a row with an offset, the matrix itself.
    base = Storage("F32", [0.5 * i - 2.0 for i in range(12)])
    tensors = collections.OrderedDict()
    tensors["layer.weight"] = (Tensor(base, (3, 4)), "F32")
    tensors["layer.weight_t"] = (Tensor(base, (4, 3), (1, 4)), "F32")
    tensors["layer.row1"] = (Tensor(base, (4,), (1,), offset=4), "F32")
    tensors["half"] = (tensor("F16", (2, 2), [0.25, -1.5, 2048.0, 0.0]), "F16")
    tensors["bfloat"] = (tensor("BF16", (3,), [1.0, -0.5, 3.0]), "BF16")
    tensors["double"] = (tensor("F64", (2,), [math.pi, -1e300]), "F64")
    tensors["steps"] = (tensor("I64", (), [123456789012]), "I64")
    tensors["mask"] = (tensor("BOOL", (3,), [True, False, True]), "BOOL")
    tensors["empty"] = (tensor("F32", (0, 3), []), "F32")
    sd = state_dict([(k, t) for k, (t, _) in tensors.items()])
    save(sd, f"{out}/plain.ckpt")
    manifest["plain.ckpt"] = [manifest_entry(k, t, d) for k, (t, d) in tensors.items()]

    # One-item dicts: Python writes SETITEM (LibTorch 1.13's unpickler stops at it: "Unknown opcode 0x73").
    w = tensor("F32", (2,), [1.0, 2.0])
    save({"w": w}, f"{out}/one_item.ckpt")
    manifest["one_item.ckpt"] = [manifest_entry("w", w, "F32")]
    save({"state_dict": {"w": w}}, f"{out}/nested_one_item.ckpt")
    manifest["nested_one_item.ckpt"] = [manifest_entry("w", w, "F32")]

    # A full Lightning checkpoint: optimizer state, callbacks, hyper-parameters with objects of several kinds.
    weight = tensor("F32", (2, 3), [float(i) for i in range(6)])
    bias = tensor("F32", (2,), [0.5, -0.5])
    hparams = AttributeDict(
        model_size="small", lr=1e-3, seed=2 ** 70, ratio=float("nan"), betas=(0.9, 0.999),
        devices=Device("cuda", 0), out_dir=pathlib.PurePosixPath("/runs/a"), tags={"x", "y"}, blob=b"\x00\xff",
        counts=collections.defaultdict(list, {"a": [1]}), args=argparse.Namespace(batch=8, name="run"))
    lightning_checkpoint = {
        "epoch": 3,
        "global_step": 300000,
        "pytorch-lightning_version": "2.2.1",
        "state_dict": state_dict([("model.weight", weight), ("model.bias", bias)]),
        "loops": {"fit_loop": {"state_dict": {}, "epoch_progress": {"total": {"ready": 4, "completed": 3}}}},
        "callbacks": {"ModelCheckpoint{'monitor': 'val', 'mode': 'min'}": {
            "monitor": "val", "best_model_score": tensor("F32", (), [0.25]), "best_model_path": "/runs/a/best.ckpt",
            "best_k_models": {"/runs/a/best.ckpt": tensor("F32", (), [0.25])}, "dirpath": "/runs/a"}},
        "optimizer_states": [{
            "state": {0: {"step": tensor("F32", (), [300000.0]), "exp_avg": tensor("F32", (2, 3), [0.0] * 6),
                          "exp_avg_sq": tensor("F32", (2, 3), [0.0] * 6)}},
            "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.0, "amsgrad": False,
                              "foreach": None, "maximize": False, "capturable": False, "differentiable": False,
                              "fused": None, "params": [0, 1]}]}],
        "lr_schedulers": [{"T_max": 100, "eta_min": 0, "base_lrs": [1e-3], "last_epoch": 3, "_step_count": 4,
                           "verbose": False, "_get_lr_called_within_step": False, "_last_lr": [1e-3]}],
        "hparams_name": "kwargs",
        "hyper_parameters": hparams,
    }
    save(lightning_checkpoint, f"{out}/lightning.ckpt")
    manifest["lightning.ckpt"] = [manifest_entry("model.weight", weight, "F32"),
                                  manifest_entry("model.bias", bias, "F32")]

    # Refused: a pickle that would run a command, a TorchScript archive, a big-endian file, a legacy pickle.
    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {out}/pwned",))

    save({"state_dict": {"w": w}, "payload": Evil()}, f"{out}/evil.ckpt")
    save({"w": w}, f"{out}/torchscript.ckpt", extra={"code/__torch__.py": "def forward(self): pass\n",
                                                     "constants.pkl": pickle.dumps(())})
    save({"w": w}, f"{out}/big_endian.ckpt", byteorder="big")
    with open(f"{out}/legacy.ckpt", "wb") as legacy:
        legacy.write(pickle.dumps({"w": 1}, protocol=2))
    with open(f"{out}/manifest.json", "w") as f:
        json.dump(manifest, f, indent=1)


def fuzz_seeds(out):
    """Seeds of tests/fuzz/corpus/{checkpoint,pickle}: the corpus's checkpoints and their data.pkl."""
    import tempfile
    with tempfile.TemporaryDirectory() as work:
        corpus(work)
        os.makedirs(f"{out}/checkpoint", exist_ok=True)
        os.makedirs(f"{out}/pickle", exist_ok=True)
        for name in ("plain", "one_item", "nested_one_item", "lightning", "evil", "torchscript"):
            with open(f"{work}/{name}.ckpt", "rb") as f:
                data = f.read()
            with open(f"{out}/checkpoint/{name}.ckpt", "wb") as f:
                f.write(data)
            with zipfile.ZipFile(f"{work}/{name}.ckpt") as archive, open(f"{out}/pickle/{name}.pkl", "wb") as f:
                f.write(archive.read("archive/data.pkl"))


def from_safetensors(source, target, layout):
    with open(source, "rb") as f:
        data = f.read()
    (header_size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + header_size])
    start = 8 + header_size
    entries = []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = info["dtype"]
        begin, end = info["data_offsets"]
        raw = data[start + begin:start + end]
        entries.append((info["data_offsets"][0], name, Tensor(Storage(dtype, raw=raw), info["shape"])))
    entries.sort()
    if layout == "plain":
        save(state_dict([(name, t) for _, name, t in entries]), target)
    elif layout == "nested":
        save({"state_dict": {name: t for _, name, t in entries}}, target)  # one-item outer dict: SETITEM
    elif layout == "lightning":
        sd = state_dict([("model." + name, t) for _, name, t in entries])
        save({"epoch": 3, "global_step": 300000, "pytorch-lightning_version": "2.2.1", "state_dict": sd,
              "optimizer_states": [{"state": {i: {"exp_avg": t} for i, (_, _, t) in enumerate(entries[:3])},
                                    "param_groups": [{"lr": 1e-3, "params": list(range(len(entries)))}]}],
              "hyper_parameters": AttributeDict(model_size="small", args=argparse.Namespace(seed=1))}, target)
    else:
        raise SystemExit(f"unknown layout {layout}")


def real_torch_save(source, target, layout):
    """The same layouts written by the real torch.save (where PyTorch is installed: the GPU machine)."""
    for name in ("torch", "torch._utils", "lightning", "lightning.pytorch", "lightning.pytorch.utilities",
                 "lightning.pytorch.utilities.parsing"):
        sys.modules.pop(name, None)
    import importlib
    real = importlib.import_module("torch")
    with open(source, "rb") as f:
        data = f.read()
    (header_size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + header_size])
    dtypes = {"F32": real.float32, "F16": real.float16, "BF16": real.bfloat16, "F64": real.float64}
    state = collections.OrderedDict()
    for name, info in sorted((k, v) for k, v in header.items() if k != "__metadata__"):
        begin, end = info["data_offsets"]
        raw = bytearray(data[8 + header_size + begin:8 + header_size + end])
        state[name] = real.frombuffer(raw, dtype=dtypes[info["dtype"]]).reshape(info["shape"]).clone()
    if layout == "plain":
        real.save(state, target)
    elif layout == "nested":
        real.save({"state_dict": dict(state)}, target)
    else:
        model = collections.OrderedDict(("model." + k, v) for k, v in state.items())
        parameters = [real.nn.Parameter(v.clone().float()) for v in list(state.values())[:3]]
        optimizer = real.optim.Adam(parameters)
        for parameter in parameters:
            parameter.grad = real.ones_like(parameter)
        optimizer.step()  # exp_avg, exp_avg_sq and step tensors in the state
        real.save({"epoch": 3, "global_step": 300000, "state_dict": model,
                   "optimizer_states": [optimizer.state_dict()],
                   "hyper_parameters": {"model_size": "small", "args": argparse.Namespace(seed=1)}}, target)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("corpus")
    c.add_argument("out")
    seeds = sub.add_parser("fuzz-seeds")
    seeds.add_argument("out")
    f = sub.add_parser("from-safetensors")
    f.add_argument("source")
    f.add_argument("target")
    f.add_argument("layout", choices=["plain", "nested", "lightning"])
    t = sub.add_parser("torch-save", help="the same with the real torch.save (needs PyTorch)")
    t.add_argument("source")
    t.add_argument("target")
    t.add_argument("layout", choices=["plain", "nested", "lightning"])
    args = parser.parse_args()
    if args.command == "corpus":
        corpus(args.out)
    elif args.command == "fuzz-seeds":
        fuzz_seeds(args.out)
    elif args.command == "torch-save":
        real_torch_save(args.source, args.target, args.layout)
    else:
        from_safetensors(args.source, args.target, args.layout)


if __name__ == "__main__":
    main()
