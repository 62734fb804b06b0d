# Stages for the Python package (issue 17). Variables from h200.sh: BIN, DB, OUT, BUILD.
# The package is build-gpu/python/fourfold (built against the wheel's torch by stage_build).

# E4 from Python: fourfold.measure(torch.softmax) on 1 x 128,256 fp32 in graph mode (cold cache,
# the CUDA default) beside the C++ softmax workload's stock figure, one after the other in one
# store. Done when the two medians are within 5 % (python_softmax.txt says the ratio).
stage_python_softmax() {
    export PYTHONPATH=$PWD/$BUILD/python
    $BIN run --workload softmax --shape 1x128256 --dtype fp32 --variants stock --device cuda \
        --db "$DB" --label e4-cpp --quiet >"$OUT/python_softmax.txt" 2>&1 || return 1
    DB="$DB" python3 - >>"$OUT/python_softmax.txt" 2>&1 <<'PY'
import os, torch, fourfold
db = os.environ["DB"]
x = torch.randn(1, 128256, device="cuda")
py = fourfold.measure(torch.softmax, x, -1, timing="graph", db=db, label="e4-python").op_time
cpp = [r for r in fourfold.open(db).records("e4-cpp") if r.ledger == "op_time"][0]
print(f"python graph: {py.value:.3f} us ({py.figures['mode']}/{py.figures['cache']}); "
      f"C++ stock: {cpp.value:.3f} us ({cpp.figures['mode']}/{cpp.figures['cache']}); "
      f"ratio python/C++ {py.value / cpp.value:.4f}; python call {py.figures['facts']['python_call']['overhead_us_median']:.2f} us")
PY
    tail -1 "$OUT/python_softmax.txt"
}

# The torch.compile decode peer (bench/compile_decode.py) and fourfold's decode in one run, then
# compare against decode's stock variant (one provenance). Llama 3 8B, bf16, ctx 512, 64 tokens,
# eager and graph (torch.compile "default" and "reduce-overhead").
stage_python_decode() {
    export PYTHONPATH=$PWD/$BUILD/python
    timeout "${PYTHON_DECODE_LIMIT_S:-400}" $BIN run --python bench/compile_decode.py \
        --workload decode,decode_compile --param model=llama3-8b --param ctx=512 --param tokens=64 \
        ${PYTHON_DECODE_ARGS:---param mode=eager,graph} \
        --dtype bf16 --device cuda --ledgers throughput,memory --db "$DB" --label decode-peer \
        >"$OUT/python_decode.txt" 2>&1
    echo "run --python compile_decode: exit $?"
    $BIN compare decode-peer --baseline-variant stock --db "$DB" >>"$OUT/python_decode.txt" 2>&1
    echo "compare decode-peer --baseline-variant stock: exit $?"
    grep -E "tokens/s|torch_compile|torch_eager" "$OUT/python_decode.txt" | head -20
}
