#!/usr/bin/env bash
# Builds the fuzz binary (libFuzzer + AddressSanitizer) and runs one target.
#   Fuzz/run.sh sse|validator|config|json|headers|numbers|messages|responses|completions|prompt [SECONDS]      (default 600)
# New inputs are added to Fuzz/corpus/<target>; crashes are written to Fuzz/findings/.
# Inputs that once crashed are kept in Fuzz/regressions/<target>, read as seeds and never
# rewritten (libFuzzer reduces the first folder only); unit tests replay them too.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: Fuzz/run.sh sse|validator|config|json|headers|numbers|messages|responses|completions|prompt [SECONDS]}
seconds=${2:-600}
binary=.build/fuzz/llmspool-fuzz
mkdir -p .build/fuzz Fuzz/findings "Fuzz/corpus/$target"
if [ ! -x "$binary" ] || [ -n "$(find Sources/LLMSpoolModel Sources/LLMSpoolSystem Sources/LLMSpoolCore Fuzz/FuzzTargets.swift -newer "$binary" -name '*.swift' | head -1)" ]; then
    includes=()
    for module in Sources/C*/; do includes+=(-I "$module"); done
    # The model, the system layer and the daemon in one module (Exports.swift re-exports
    # the first two across targets, which one module does not need).
    swiftc -sanitize=fuzzer,address -parse-as-library -O -module-name LLMSpoolFuzz -package-name llmspool "${includes[@]}" \
        $(find Sources/LLMSpoolModel Sources/LLMSpoolSystem Sources/LLMSpoolCore -name '*.swift' ! -name Exports.swift | sort) Fuzz/FuzzTargets.swift \
        $(pkg-config --cflags-only-I libcurl | sed 's/-I/-Xcc -I/g') \
        -lcurl -linotifytools -lmicrohttpd -lyaml -o "$binary"
fi
mkdir -p "Fuzz/regressions/$target"
LLMSPOOL_FUZZ_TARGET=$target "$binary" "Fuzz/corpus/$target" "Fuzz/regressions/$target" -max_total_time="$seconds" -max_len=65536 \
    -artifact_prefix=Fuzz/findings/"$target"- -print_final_stats=1
