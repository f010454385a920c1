# Shared by the device ablation scripts (device_markets.sh, device_probe.sh); sourced, not run.
# Sets OUT and LD_LIBRARY_PATH; build_fxt builds fxt for sm_90 into build-dev and sets FXT;
# make_market NAME FLAGS DIR makes a synthetic market (EVENTS, default 1M; SEED, default 1) and
# its store DIR/store, logging to $OUT/NAME.data.log; it fails when either step does.
OUT=${OUT:-/tmp/out}
export LD_LIBRARY_PATH=$PWD/.devdeps/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
build_fxt() {
  cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DCMAKE_PREFIX_PATH=$PWD/.devdeps -DFXT_BENCH=OFF >"$OUT/cmake.log" 2>&1
  cmake --build build-dev -j16 --target fxt >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; return 1; }
  FXT=$PWD/build-dev/bin/fxt
}
make_market() {
  local name=$1 flags=$2 w=$3
  mkdir -p "$w"
  # shellcheck disable=SC2086
  { $FXT synth -q --out $w/synth.dbn.zst --events ${EVENTS:-1000000} --seed ${SEED:-1} --latent $flags &&
    $FXT ingest -q $w/synth.dbn.zst --out $w/store; } >"$OUT/$name.data.log" 2>&1
}
