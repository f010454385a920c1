#!/usr/bin/env bash
# One device call for the one-window inference path (docs/GPU.md "One window at a time"): builds
# the previous commit's fxt from .devsrc-base (here, before the call: rm -rf .devsrc-base &&
# mkdir .devsrc-base && git archive main | tar -x -C .devsrc-base) beside this tree's build, runs
# the GPU test programs, then device_check.sh's `latency` step (this build, this build with
# FXT_SMALL_GEMM=0, the base build, alternated twice) and a 500 k-step GPU CartPole run of each
# build (RL acting goes through the small products). carry: [".devdeps", ".devdata", ".devsrc-base"].
set -uo pipefail
OUT=${OUT:-out/device}
export LD_LIBRARY_PATH=$PWD/.devdeps/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}  # carried XGBoost
mkdir -p "$OUT"
T="adamw_train_test batch_train_test cfc_heads_test es_mbo_train_test gpu_loss_test gpu_perception_test mamba2_test ops_test rl_env_gpu_test rl_learner_train_test runtime_test train_step_train_test window_scorer_train_test"
B=$PWD/.devsrc-base
(cd "$B" && cmake -S . -B build-base -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
   -DCMAKE_PREFIX_PATH="$PWD/../.devdeps" > "$OUT/base_cfg.log" 2>&1 &&
   cmake --build build-base -j8 --target fxt > "$OUT/base_build.log" 2>&1
 echo "base build rc=$? at $SECONDS s") &
FXT_BUILD_TARGETS="fxt $T" FXT_GPU_TESTS="$T" bash scripts/device_check.sh gpu 2>&1 | tail -40
wait
echo "== latency at $SECONDS s"
FXT_BUILD_TARGETS=fxt FXT_BASE_FXT=$B/build-base/bin/fxt bash scripts/device_check.sh latency 2>&1 | tail -8
echo "== GPU CartPole at $SECONDS s"
F=(rl train --env cartpole --steps 500000 --atoms 101 --learning-starts 10000 --train-frequency 10
   --target-update 500 --exploration-fraction 0.5 --lr 2.5e-4 --no-double --device cuda --seed 1
   --eval-every 0 --eval-episodes 100)
for m in new base; do
  [ "$SECONDS" -gt "${FXT_RL_AFTER_LIMIT:-480}" ] && break
  x=build-dev/bin/fxt
  [ $m = base ] && x=$B/build-base/bin/fxt
  t0=$(date +%s.%N)
  "$x" "${F[@]}" --out "/tmp/rl_$m" > "$OUT/rl_$m.log" 2>&1
  echo "rl $m: $(python3 -c "import time; print(round(time.time() - $t0, 2))") s; $(tail -1 "$OUT/rl_$m.log")"
done
