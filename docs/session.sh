#!/usr/bin/env bash
# Replays docs/session.md's CPU session in a fresh folder and prints it as typed:
# `bash docs/session.sh /tmp/gemm-campaign > transcript.txt` (kgit installed, about 10 minutes).
set -uo pipefail
where=${1:?usage: session.sh EMPTY_FOLDER}
mkdir -p "$where" && cd "$where" || exit 2
manifest='target_op: gemm
target_backend: TRITON
target_gpu: CPU
primary_metric: Combined Step TFLOPS
kernel_source: [gemm_kernel.py]
test_command: python -m pytest -q test_gemm.py
quick_command: python bench_gemm.py
env: {TRITON_INTERPRET: "1"}
target_shapes:
  - {label: g128, M: 128, N: 128, K: 128, dtype: fp32}
  - {label: g128x256, M: 128, N: 256, K: 128, dtype: fp32}
  - {label: g256, M: 256, N: 256, K: 128, dtype: fp32}'
step() {  # prints the command as typed, then its output; returns its exit status
    printf '$ %s\n' "$1"
    local start=$SECONDS status
    bash -c "$1" 2>&1
    status=$?
    printf '# %s: %d s\n' "$1" $((SECONDS - start)) >&2
    return $status
}
# What one types after a verdict: accept it, or roll the round back with the verdict's reason.
decide() {
    step 'kgit round accept' || step "kgit round rollback --reason \"$1\""
}
step 'git init -q'
step 'cp "$(python -c '"'"'import kgit.resources as r; print(r.examples_dir())'"'"')"/gemm/*.py .'
step "sed -i 's/^AUTOTUNE = 1\$/AUTOTUNE = 0/' gemm_kernel.py"
step 'git add . && git commit -qm "Triton GEMM, its tests and quick harness"'
printf '%s\n' "$manifest" > manifest.yaml
printf '$ cat manifest.yaml\n%s\n' "$manifest"
step 'kgit init gemm_cpu --manifest manifest.yaml'
step 'kgit -q baseline --wait-audit'
step 'kgit round start "128x128x64 tiles: 4x fewer programs"'
step "sed -i 's/^BLOCK_M = .*/BLOCK_M = 128/; s/^BLOCK_N = .*/BLOCK_N = 128/; s/^BLOCK_K = .*/BLOCK_K = 64/' gemm_kernel.py"
step 'git commit -qam "bigger tiles"'
step 'kgit -q round validate'
decide "did not clear the noise floor"
step 'kgit round start "drop the K-tail masks"'
step "sed -i 's/range(0, tl.cdiv(K, BLOCK_K))/range(0, K \\/\\/ BLOCK_K)/' gemm_kernel.py"
step 'git commit -qam "whole K tiles only"'
step 'git checkout -- gemm_kernel.py'
step 'kgit round rollback --reason "gate: wrong when K % BLOCK_K != 0"'
step 'kgit round start "32x32x32 tiles: more programs in flight"'
step "sed -i 's/^BLOCK_M = .*/BLOCK_M = 32/; s/^BLOCK_N = .*/BLOCK_N = 32/; s/^BLOCK_K = .*/BLOCK_K = 32/' gemm_kernel.py"
step 'git commit -qam "smaller tiles"'
step 'kgit -q round validate'
decide "4x the programs cost more than latency hiding gained"
step 'kgit log'
step 'git log -1 refs/kgit/gemm_cpu/rounds/4'
step 'git log -1 --notes=kgit/gemm_cpu/rounds kgit/gemm_cpu/best'
step 'kgit finish'
