#!/usr/bin/python3
"""Generates the bad-input corpus (tests/bad_inputs/files/). Each file is broken in one
way; cases.txt says which command runs on it, the exit code it must give and the message
fragment that names the problem. Run: /usr/bin/python3 tests/bad_inputs/generate.py
(python3-onnx, numpy). Deterministic. tests/bad_inputs/run.sh checks every case."""
import json
import os
import struct

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "files")
os.makedirs(OUT, exist_ok=True)
DEMO = os.path.join(HERE, "..", "..", "models", "demo", "model.onnx")


def path(name):
    return os.path.join(OUT, name)


def write(name, data, mode="wb"):
    with open(path(name), mode) as f:
        f.write(data)


def mlp(name, opset=13, init=None, nodes=None, inputs=None, meta=None, raw=True, check=False):
    """A 4-3 Gemm+Relu model whose parts can be replaced to break it."""
    w = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
    b = np.zeros(3, dtype=np.float32)
    init = init if init is not None else [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "B")]
    nodes = nodes if nodes is not None else [
        helper.make_node("Gemm", ["x", "W", "B"], ["h"], name="fc", transB=1),
        helper.make_node("Relu", ["h"], ["y"], name="act")]
    inputs = inputs if inputs is not None else [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])]
    g = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])],
                          initializer=init)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="bad-inputs")
    m.ir_version = 8
    for k, v in (meta or {"deeplocalize.loss": "mse", "deeplocalize.epochs": "1"}).items():
        p = m.metadata_props.add()
        p.key, p.value = k, v
    if check:
        onnx.checker.check_model(m)
    write(name, m.SerializeToString())
    return m


demo = open(DEMO, "rb").read()
# --- ONNX files ---
write("truncated.onnx", demo[: len(demo) // 2])
write("truncated_tiny.onnx", demo[:7])
flipped = bytearray(demo)
flipped[0] ^= 0xFF  # the first field tag becomes invalid
write("bitflip_header.onnx", bytes(flipped))
flipped = bytearray(demo)
for k in range(2, len(flipped), 97):  # many flipped bits through the whole file
    flipped[k] ^= 0x5A
write("bitflip_scattered.onnx", bytes(flipped))
write("wrong_magic.onnx", b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)
write("text_file.onnx", b"this is not a model\n", "wb")
write("empty.onnx", b"")
mlp("opset1.onnx", opset=1)
mlp("opset99.onnx", opset=99)
mlp("missing_initializer.onnx", init=[numpy_helper.from_array(np.zeros(3, np.float32), "B")])
mlp("dangling_input.onnx", nodes=[
    helper.make_node("Gemm", ["x", "W", "B"], ["h"], name="fc", transB=1),
    helper.make_node("Add", ["h", "ghost"], ["h2"], name="add_ghost"),
    helper.make_node("Relu", ["h2"], ["y"], name="act")])
mlp("cycle.onnx", nodes=[
    helper.make_node("Gemm", ["x", "W", "B"], ["h"], name="fc", transB=1),
    helper.make_node("Add", ["h", "z"], ["a"], name="loop_a"),
    helper.make_node("Relu", ["a"], ["z"], name="loop_b"),
    helper.make_node("Relu", ["z"], ["y"], name="act")])
neg = numpy_helper.from_array(np.zeros(3, np.float32), "B")
neg.dims[:] = [-3]
mlp("negative_dim.onnx", init=[numpy_helper.from_array(np.ones((3, 4), np.float32), "W"), neg])
mlp("zero_dim_input.onnx", inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 0])],
    init=[numpy_helper.from_array(np.ones((3, 0), np.float32), "W"),
          numpy_helper.from_array(np.zeros(3, np.float32), "B")])
huge_w = TensorProto()
huge_w.name, huge_w.data_type = "W", TensorProto.FLOAT
huge_w.dims.extend([3, 4000000000])
mlp("huge_initializer.onnx", inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4000000000])],
    init=[huge_w, numpy_helper.from_array(np.zeros(3, np.float32), "B")])
mlp("huge_dims.onnx", nodes=[
    helper.make_node("ReduceMean", ["x"], ["m"], name="mean", axes=[1]),
    helper.make_node("Gemm", ["m", "W", "B"], ["h"], name="fc", transB=1),
    helper.make_node("Relu", ["h"], ["y"], name="act")],
    inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2000000000])],
    init=[numpy_helper.from_array(np.ones((3, 1), np.float32), "W"),
          numpy_helper.from_array(np.zeros(3, np.float32), "B")])
# An activation of 4.5 GiB for one sample (dimension 0 is the batch, re-batched if fixed).
mlp("huge_activation.onnx", nodes=[
    helper.make_node("Unsqueeze", ["x", "axes"], ["u"], name="unsqueeze"),
    helper.make_node("Expand", ["u", "wide"], ["e"], name="expand"),
    helper.make_node("ReduceMean", ["e"], ["m"], name="mean", axes=[2], keepdims=0),
    helper.make_node("Gemm", ["m", "W", "B"], ["h"], name="fc", transB=1),
    helper.make_node("Relu", ["h"], ["y"], name="act")],
    init=[numpy_helper.from_array(np.ones((3, 4), np.float32), "W"),
          numpy_helper.from_array(np.zeros(3, np.float32), "B"),
          numpy_helper.from_array(np.array([2], np.int64), "axes"),
          numpy_helper.from_array(np.array([1, 4, 300000000], np.int64), "wide")])
# A fixed batch of 1 (an export without dynamic_axes) baked into a Reshape's shape by a
# Concat that is not a constant deeplocalize rewrites: the error names the node.
mlp("fixed_batch_baked.onnx", nodes=[
    helper.make_node("Concat", ["one", "rest"], ["shape"], name="shape", axis=0),
    helper.make_node("Reshape", ["x", "shape"], ["r"], name="reshape"),
    helper.make_node("Gemm", ["r", "W", "B"], ["h"], name="fc", transB=1),
    helper.make_node("Relu", ["h"], ["y"], name="act")],
    init=[numpy_helper.from_array(np.ones((3, 4), np.float32), "W"),
          numpy_helper.from_array(np.zeros(3, np.float32), "B"),
          numpy_helper.from_array(np.array([1], np.int64), "one"),
          numpy_helper.from_array(np.array([-1], np.int64), "rest")],
    inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 2])])
# Pads that would make a 3-billion-wide axis: refused before Pad builds its index maps.
mlp("huge_pad.onnx", nodes=[
    helper.make_node("Pad", ["x", "pads"], ["p"], name="pad"),
    helper.make_node("ReduceMean", ["p"], ["m"], name="mean", axes=[1]),
    helper.make_node("Gemm", ["m", "W", "B"], ["h"], name="fc", transB=1),
    helper.make_node("Relu", ["h"], ["y"], name="act")],
    init=[numpy_helper.from_array(np.array([0, 0, 0, 3000000000], np.int64), "pads"),
          numpy_helper.from_array(np.ones((3, 1), np.float32), "W"),
          numpy_helper.from_array(np.zeros(3, np.float32), "B")])
# A Resize whose scales ask for an 800000-wide map: refused before its interpolation tables
# are sized (fuzz_onnx found the sizes variant throwing std::length_error).
mlp("huge_resize.onnx", nodes=[
    helper.make_node("Reshape", ["x", "img"], ["i"], name="to_image"),
    helper.make_node("Resize", ["i", "", "scales"], ["r"], name="resize", mode="linear"),
    helper.make_node("ReduceMean", ["r"], ["m"], name="mean", axes=[2, 3], keepdims=0),
    helper.make_node("Gemm", ["m", "W", "B"], ["h"], name="fc", transB=1),
    helper.make_node("Relu", ["h"], ["y"], name="act")],
    init=[numpy_helper.from_array(np.array([-1, 1, 2, 2], np.int64), "img"),
          numpy_helper.from_array(np.array([1, 1, 4e5, 4e5], np.float32), "scales"),
          numpy_helper.from_array(np.ones((3, 1), np.float32), "W"),
          numpy_helper.from_array(np.zeros(3, np.float32), "B")])
# A stride of 0: ONNX's own shape inference divides by it (SIGFPE), so import refuses it first.
mlp("conv_stride_zero.onnx", nodes=[
    helper.make_node("Conv", ["x", "W"], ["c"], name="conv", kernel_shape=[2, 2], strides=[1, 0]),
    helper.make_node("Flatten", ["c"], ["y"], name="flat")],
    init=[numpy_helper.from_array(np.ones((1, 1, 2, 2), np.float32), "W")],
    inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 4, 4])])
# A rank-0 A for Gemm in an opset-1 model: ONNX's version converter (Gemm 6->7 adapter)
# and Gemm-6 shape inference read its first dims unchecked (SIGSEGV, found by fuzzing),
# so import refuses it first.
mlp("gemm_rank0_opset1.onnx", opset=1, inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, [])])
# The same with a rank ONNX infers: the mean of all of x, fed to Gemm (opset 6).
mlp("gemm_rank0_inferred_opset6.onnx", opset=6, nodes=[
    helper.make_node("ReduceMean", ["x"], ["m"], name="mean", axes=[0, 1], keepdims=0),
    helper.make_node("Gemm", ["m", "W", "B"], ["h"], name="fc", transB=1),
    helper.make_node("Relu", ["h"], ["y"], name="act")])
ext = numpy_helper.from_array(np.ones((3, 4), np.float32), "W")
ext.ClearField("raw_data")
ext.data_location = TensorProto.EXTERNAL
e = ext.external_data.add()
e.key, e.value = "location", "weights.bin"
mlp("external_data.onnx", init=[ext, numpy_helper.from_array(np.zeros(3, np.float32), "B")])
mlp("unsupported_op.onnx", nodes=[
    helper.make_node("Gemm", ["x", "W", "B"], ["h"], name="fc", transB=1),
    helper.make_node("Asinh", ["h"], ["e1"], name="asinh_1"),
    helper.make_node("Asinh", ["e1"], ["e2"], name="asinh_2"),
    helper.make_node("Relu", ["e2"], ["y"], name="act")])
# Resize in a mode ONNX does not define and a ScatterND index past the data: refused
# naming the node (exit 2), never run wrong.
mlp("resize_bad_mode.onnx", nodes=[
    helper.make_node("Reshape", ["x", "shape4"], ["x4"], name="to4d"),
    helper.make_node("Resize", ["x4", "", "scales"], ["r"], name="up", mode="lanczos"),
    helper.make_node("Flatten", ["r"], ["f"], name="flat"),
    helper.make_node("Gemm", ["f", "W", "B"], ["h"], name="fc", transB=1),
    helper.make_node("Relu", ["h"], ["y"], name="act")],
    init=[numpy_helper.from_array(np.array([-1, 1, 2, 2], np.int64), "shape4"),
          numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"),
          numpy_helper.from_array(np.ones((3, 16), np.float32), "W"),
          numpy_helper.from_array(np.zeros(3, np.float32), "B")])
mlp("scatternd_bad_index.onnx", nodes=[
    helper.make_node("Gemm", ["x", "W", "B"], ["h"], name="fc", transB=1),
    helper.make_node("ScatterND", ["h", "idx", "upd"], ["s"], name="scatter"),
    helper.make_node("Relu", ["s"], ["y"], name="act")],
    init=[numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(3, 4) / 10, "W"),
          numpy_helper.from_array(np.zeros(3, np.float32), "B"),
          numpy_helper.from_array(np.array([[0, 5]], np.int64), "idx"),
          numpy_helper.from_array(np.zeros(1, np.float32), "upd")])
nanw = np.ones((3, 4), np.float32)
nanw[1, 2] = np.nan
mlp("nan_initializer.onnx", init=[numpy_helper.from_array(nanw, "W"),
                                  numpy_helper.from_array(np.zeros(3, np.float32), "B")])
infw = np.ones((3, 4), np.float32)
infw[0, 0] = np.inf
mlp("inf_initializer.onnx", init=[numpy_helper.from_array(infw, "W"),
                                  numpy_helper.from_array(np.zeros(3, np.float32), "B")])
mlp("bad_attribute.onnx", nodes=[
    helper.make_node("Gemm", ["x", "W", "B"], ["h"], name="fc", transB=1, frobnicate=3),
    helper.make_node("Relu", ["h"], ["y"], name="act")])
short_w = numpy_helper.from_array(np.ones((3, 4), np.float32), "W")
short_w.raw_data = np.ones(11, np.float32).tobytes()
mlp("raw_size_mismatch.onnx", init=[short_w, numpy_helper.from_array(np.zeros(3, np.float32), "B")])
mlp("bad_metadata_value.onnx", meta={"deeplocalize.loss": "mse", "deeplocalize.epochs": "ten"})
mlp("unknown_metadata_key.onnx", meta={"deeplocalize.loss": "mse", "deeplocalize.epoch": "3"})
mlp("no_loss.onnx", meta={"deeplocalize.epochs": "1"})
# An SGD model with momentum: `--optimizer adam` drops the momentum with a note; the
# same contradiction within the metadata is an error.
mlp("meta_sgd_momentum.onnx", meta={"deeplocalize.loss": "mse", "deeplocalize.epochs": "1",
                                    "deeplocalize.optimizer": "sgd", "deeplocalize.momentum": "0.9"})
mlp("meta_adam_momentum.onnx", meta={"deeplocalize.loss": "mse", "deeplocalize.epochs": "1",
                                     "deeplocalize.optimizer": "adam", "deeplocalize.momentum": "0.9"})
mlp("two_inputs.onnx", nodes=[
    helper.make_node("Gemm", ["x", "W", "B"], ["h"], name="fc", transB=1),
    helper.make_node("Add", ["h", "x2"], ["h2"], name="add2"),
    helper.make_node("Relu", ["h2"], ["y"], name="act")],
    inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4]),
            helper.make_tensor_value_info("x2", TensorProto.FLOAT, ["N", 3])])
mlp("good.onnx", check=True)
# int64 token ids [N, 4] -> embedding table E [6, 3] (Gather) -> mean over the sequence.
mlp("embedding_ids.onnx", check=True,
    init=[numpy_helper.from_array((np.arange(18, dtype=np.float32).reshape(6, 3) - 9) / 10, "E")],
    nodes=[helper.make_node("Gather", ["E", "x"], ["e"], name="emb"),
           helper.make_node("ReduceMean", ["e"], ["y"], name="pool", axes=[1], keepdims=0)],
    inputs=[helper.make_tensor_value_info("x", TensorProto.INT64, ["N", 4])])
# Eval-mode exports (torch.onnx.export(model.eval(), ...)): they train, with a note that
# says what changed. A BatchNormalization in inference mode (one output, no statistics):
mlp("eval_mode_bn.onnx", check=True, nodes=[
    helper.make_node("Gemm", ["x", "W", "B"], ["h"], name="fc", transB=1),
    helper.make_node("BatchNormalization", ["h", "scale", "shift", "mean", "var"], ["n"], name="bn"),
    helper.make_node("Relu", ["n"], ["y"], name="act")],
    init=[numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(3, 4) / 10, "W"),
          numpy_helper.from_array(np.zeros(3, np.float32), "B"),
          numpy_helper.from_array(np.ones(3, np.float32), "scale"),
          numpy_helper.from_array(np.zeros(3, np.float32), "shift"),
          numpy_helper.from_array(np.zeros(3, np.float32), "mean"),
          numpy_helper.from_array(np.ones(3, np.float32), "var")])
# ... and identical initializers deduplicated into an Identity alias: two layers, one tensor.
mlp("eval_mode_tied.onnx", check=True, nodes=[
    helper.make_node("Identity", ["W1"], ["W2"], name="alias"),
    helper.make_node("Gemm", ["x", "W1", "B"], ["h1"], name="fc1", transB=1),
    helper.make_node("Relu", ["h1"], ["a1"], name="act1"),
    helper.make_node("Gemm", ["a1", "W2", "B"], ["h2"], name="fc2", transB=1),
    helper.make_node("Relu", ["h2"], ["a2"], name="act2"),
    helper.make_node("Gemm", ["a2", "W", "B3"], ["y"], name="out", transB=1)],
    init=[numpy_helper.from_array(np.eye(4, dtype=np.float32) * 0.5, "W1"),
          numpy_helper.from_array(np.zeros(4, np.float32), "B"),
          numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(3, 4) / 10, "W"),
          numpy_helper.from_array(np.zeros(3, np.float32), "B3")])
# A fixed batch of 1 (no dynamic_axes) that deeplocalize can re-batch: it trains, with a note.
mlp("fixed_batch_one.onnx", check=True, inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])])

# --- data files (for good.onnx: 4 features, 3 targets) ---
write("good.csv", "a,b,c,d,t1,t2,t3\n1,2,3,4,0,1,0\n5,6,7,8,1,0,0\n", "w")
write("bom_text_cell.csv", "\ufeffa,b,c,d,t1,t2,t3\n1,2,3,4,0,1,0\n5,six,7,8,1,0,0\n", "w")
with open(path("crlf_ragged.csv"), "w", newline="") as f:
    f.write("a,b,c,d,t1,t2,t3\r\n1,2,3,4,0,1,0\r\n5,6,7,8,1,0\r\n")
write("quoted_text.csv", 'a,b,c,d,t1,t2,t3\n1,2,"3",4,0,1,0\n5,6,"seven",8,1,0,0\n', "w")
write("empty_cell.csv", "a,b,c,d,t1,t2,t3\n1,2,3,4,0,1,0\n5,6,,8,1,0,0\n", "w")
write("text_cell.csv", "1,2,3,4,0,1,0\n5,6,7,8,1,0,0\n9,10,11,x12,0,0,1\n", "w")
write("ragged.csv", "a,b,c,d,t1,t2,t3\n1,2,3,4,0,1,0\n5,6,7,8,1,0,0,9\n", "w")
write("header_only.csv", "a,b,c,d,t1,t2,t3\n", "w")
write("empty.csv", "", "w")
write("feature_mismatch.csv", "a,b,c,t1,t2,t3\n1,2,3,0,1,0\n", "w")
write("semicolons.csv", "a;b;c;d;t1;t2;t3\n1;2;3;4;0;1;0\n", "w")
write("blank_line.csv", "a,b,c,d,t1,t2,t3\n1,2,3,4,0,1,0\n\n5,6,7,8,1,0,0\n", "w")
write("unterminated_quote.csv", 'a,b,c,d,t1,t2,t3\n1,2,"3,4,0,1,0\n', "w")
write("ids_fractional.csv", "a,b,c,d,t1,t2,t3\n0,1,2,3,0,1,0\n5,1.5,2,0,1,0,0\n", "w")
write("ids_out_of_table.csv", "a,b,c,d,t1,t2,t3\n0,1,2,3,0,1,0\n5,1,9,0,1,0,0\n", "w")
# int64 ids: below -6 (Gather counts negative ids from the end, so -6..-1 are rows), and
# beyond what an int64 holds.
write("ids_negative.csv", "a,b,c,d,t1,t2,t3\n0,1,2,3,0,1,0\n5,1,-7,0,1,0,0\n", "w")
write("ids_beyond_int64.csv", "a,b,c,d,t1,t2,t3\n0,1,2,3,0,1,0\n5,1,2,1e19,1,0,0\n", "w")
write("labels_out_of_range.csv", "a,b,c,d,label\n1,2,3,4,0\n5,6,7,8,3\n", "w")
write("npy_bad_magic.npy", b"\x93NUMPX\x01\x00" + b"\x00" * 32)
good_npy = path("tmp.npy")
np.save(good_npy, np.ones((2, 7), np.float32))
data = open(good_npy, "rb").read()
os.remove(good_npy)
write("npy_truncated.npy", data[: len(data) - 9])
np.save(path("npy_big_endian.npy"), np.ones((2, 7), dtype=">f4"))
np.save(path("npy_object.npy"), np.array([[1, "a"]], dtype=object), allow_pickle=True)
np.savez(path("npz_missing_y.npz"), x=np.ones((2, 4), np.float32), labels=np.zeros((2, 3), np.float32))
# --- batch manifests and summaries ---
write("number_overflow.json", '{"cases": [{"name": "a", "model": "m.onnx", "data": "d.csv", "options": {"lr": 4e308}}]}', "w")
write("not_a_trace.trace", b"DLTRACE 1\n\xff\xff\xff\xff\xff\xff\xff\x7f{}")
write("trace_wrong_magic.trace", b"TRACE? 1\n")
write("trace_future.trace", b"DLTRACE 2\n" + struct.pack("<Q", 2) + b"{}")
# --- merge: summaries nested too deep, of another version, with counts out of range ---
summary_record = {"index": 0, "name": "a", "kind": "", "source": "", "pair": "", "model": "m.onnx", "data": "d.csv",
                  "status": "input_error", "error": "bad", "verdict": None, "findings": 0, "primary": None,
                  "expected": None, "training": None, "timing": None, "time_to_verdict_s": None, "seconds": 0.0,
                  "scores": {"detected": None, "false_alarm": None, "localized": None, "root_cause": None,
                             "as_expected": False}}
summary_totals = {"cases": 1, "ran": 0, "input_errors": 1, "crashed": 0, "timeouts": 0, "faults": 0,
                  "with_expectation": 0, "faulty": 0, "detected": 0, "localizable": 0, "localized": 0,
                  "root_cause_cases": 0, "root_cause": 0, "non_faulty": 0, "false_alarms": 0, "as_expected": 0,
                  "unexpected": 1, "median_time_to_verdict_s": None}


def summary(record=None, **fields):
    s = {"tool": "deeplocalize", "version": "0", "summary_version": 2, "input": "cases", "detector": "deeplocalize",
         "shard": None, "total_cases": 1, "manifest": "0123456789abcdef",
         "options": {"no_stop": False, "verify_fixes": False, "max_trials": 12, "trial_budget_s": 0, "timeout_s": 0,
                     "set": []},
         "cases": [dict(summary_record, **(record or {}))], "totals": summary_totals, "wall_s": 1.0}
    s.update(fields)
    return json.dumps(s)


write("summary_nested_100.json", summary().replace('"bad"', "[" * 100 + "]" * 100), "w")
write("summary_version_99.json", summary(summary_version=99), "w")
write("summary_index_minus_one.json", summary({"index": -1}), "w")
write("summary_total_1e15.json", summary(total_cases=10**15), "w")
write("summary_unknown_status.json", summary({"status": "exploded"}), "w")
print("wrote", len(os.listdir(OUT)), "files to", OUT)

# --- declared sizes, streams and text encodings (issue 18, input readers) ---
import zlib  # noqa: E402


def zip_bytes(entries):
    """A ZIP archive of (name, method, data, crc, csize, usize, extra) entries whose
    central directory declares csize/usize (and extra) as given."""
    locals_, central = b"", b""
    for name, method, data, crc, csize, usize, extra in entries:
        name = name.encode()
        offset = len(locals_)
        locals_ += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, method, 0, 0, crc, csize & 0xFFFFFFFF,
                               usize & 0xFFFFFFFF, len(name), 0) + name + data
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 45, 20, 0, method, 0, 0, crc, csize & 0xFFFFFFFF,
                               usize & 0xFFFFFFFF, len(name), len(extra), 0, 0, 0, 0, offset) + name + extra
    eocd = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(entries), len(entries), len(central), len(locals_), 0)
    return locals_ + central + eocd


def npy_header(shape, descr="<f4"):
    h = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, repr(tuple(shape)))
    h += " " * ((64 - (10 + len(h) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode()


# 128 bytes declaring 140,000,000 x 5 float32 (2.6 GB) and holding none of it.
write("npy_declares_huge.npy", npy_header((140000000, 5)))
# An entry of a few hundred bytes declaring 3 GB uncompressed: over DEFLATE's 1032:1.
comp = zlib.compressobj(9, zlib.DEFLATED, -15)
payload = comp.compress(npy_header((750000000,)) + b"\0" * 4096) + comp.flush()
y_npy = npy_header((2, 3)) + np.zeros((2, 3), np.float32).tobytes()
y_entry = ("y.npy", 0, y_npy, zlib.crc32(y_npy), len(y_npy), len(y_npy), b"")
write("npz_declares_3gb.npz", zip_bytes([("x.npy", 8, payload, 0, len(payload), 3000000000, b""), y_entry]))
# A stored entry whose sizes are deferred to a ZIP64 extra field that holds only one.
body = npy_header((2, 7)) + np.ones((2, 7), np.float32).tobytes()
write("npz_zip64_truncated.npz", zip_bytes([("x.npy", 0, body, zlib.crc32(body), 0xFFFFFFFF, 0xFFFFFFFF,
                                            struct.pack("<HHQ", 1, 8, len(body))), y_entry]))
write("cr_only.csv", b"a,b,c,d,t1,t2,t3\r1,2,3,4,0,1,0\r5,6,7,8,1,0,0\r")
write("nul_bytes.csv", b"\0" * 4096)
write("invalid_utf8.csv", b"a,b,c,d,t1,t2,t3\n1,2,3,4,0,1,0\n5,6,\xff\xfe\x1b[2J,8,1,0,0\n")
write("utf16.csv", "a,b,c,d,t1,t2,t3\n1,2,3,4,0,1,0\n".encode("utf-16"))
# --- option values out of range, from the model's metadata and from batch options (issue 18) ---
for name, key, value in [("meta_epochs_huge.onnx", "epochs", "9223372036854775807"),
                         ("meta_lr_negative.onnx", "learning_rate", "-1"),
                         ("meta_split_one.onnx", "validation_split", "1.0"),
                         ("meta_targets_zero.onnx", "targets", "0"),
                         ("meta_batch_zero.onnx", "batch_size", "0")]:
    mlp(name, meta={"deeplocalize.loss": "mse", "deeplocalize." + key: value})
for name, options in [("batch_epochs_wrap.json", '{"targets": 3, "epochs": 18446744073709551615}'),
                      ("batch_epochs_huge.json", '{"targets": 3, "epochs": 9223372036854775807}'),
                      ("batch_probe_every_zero.json", '{"targets": 3, "epochs": 1, "probe_every": 0}')]:
    write(name, '{"cases": [{"name": "a", "model": "good.onnx", "data": "good.csv", "options": %s}]}' % options, "w")
# --- attribute domains and nested subgraphs (issue 18) ---
W0 = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(3, 4) / 10, "W")
B0 = numpy_helper.from_array(np.zeros(3, np.float32), "B")
GEMM = helper.make_node("Gemm", ["x", "W", "B"], ["h"], name="fc", transB=1)
mlp("dropout_ratio_1_5.onnx", init=[W0, B0, numpy_helper.from_array(np.array(1.5, np.float32), "ratio")], nodes=[
    GEMM, helper.make_node("Dropout", ["h", "ratio"], ["y"], name="drop")])
mlp("leaky_relu_alpha_inf.onnx", nodes=[GEMM, helper.make_node("LeakyRelu", ["h"], ["y"], name="act", alpha=float("inf"))])
mlp("elu_alpha_nan.onnx", nodes=[GEMM, helper.make_node("Elu", ["h"], ["y"], name="act", alpha=float("nan"))])
BN_INIT = [numpy_helper.from_array(np.ones(3, np.float32), "s"), numpy_helper.from_array(np.zeros(3, np.float32), "o"),
           numpy_helper.from_array(np.zeros(3, np.float32), "m"), numpy_helper.from_array(np.ones(3, np.float32), "v")]
mlp("batchnorm_epsilon_0.onnx", init=[W0, B0] + BN_INIT, nodes=[
    GEMM, helper.make_node("BatchNormalization", ["h", "s", "o", "m", "v"], ["y"], name="bn", epsilon=0.0)])
mlp("batchnorm_momentum_2.onnx", init=[W0, B0] + BN_INIT, nodes=[
    GEMM, helper.make_node("BatchNormalization", ["h", "s", "o", "m", "v"], ["y"], name="bn", momentum=2.0)])


def nested_if(levels):
    """Gemm then `levels` If nodes, each the then-branch of the one around it."""
    body = helper.make_graph([helper.make_node("Identity", ["h"], ["r0"], name="leaf")], "leaf", [],
                             [helper.make_tensor_value_info("r0", TensorProto.FLOAT, ["N", 3])])
    other = helper.make_graph([helper.make_node("Identity", ["h"], ["e"], name="else")], "else", [],
                              [helper.make_tensor_value_info("e", TensorProto.FLOAT, ["N", 3])])
    for k in range(1, levels):
        body = helper.make_graph([helper.make_node("If", ["c"], ["r%d" % k], name="if%d" % k, then_branch=body,
                                                   else_branch=other)], "level%d" % k, [],
                                 [helper.make_tensor_value_info("r%d" % k, TensorProto.FLOAT, ["N", 3])])
    c = numpy_helper.from_array(np.array(True), "c")
    return [W0, B0, c], [GEMM, helper.make_node("If", ["c"], ["y"], name="outer_if", then_branch=body,
                                                 else_branch=other)]


init, nodes = nested_if(1)
mlp("if_subgraph.onnx", init=init, nodes=nodes)
init, nodes = nested_if(40)
mlp("if_nested_40.onnx", init=init, nodes=nodes)
