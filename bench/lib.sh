# bench/lib.sh — what the benchmark scripts share; sourced, not run.

# bench_config FILE PROVIDER SECRET [sealed|plaintext] [EXTRA]
# Writes the configuration the benchmarks measure to FILE: the default one
# (SQLite beside the file, every body sealed under a key made at start),
# one endpoint `bench` of PROVIDER trusting SECRET, a queue deep enough that
# an open loop never meets 503 Overloaded. `plaintext` is the ablation with
# encryption at rest off; EXTRA (TOML) is appended, e.g. an [admin] section.
# bench/run.sh keeps its own writer: its variants (PostgreSQL, targets,
# filters) change more than this does.
bench_config() {
    local file=$1 provider=$2 secret=$3 sealing=${4:-sealed} extra=${5:-}
    local encryption='[[encryption.key]]
id = "bench-1"
value_file = "bench.key"
create_if_missing = true'
    [[ $sealing == plaintext ]] && encryption='allow_plaintext = true'
    cat >"$file" <<TOML
# Written by bench/$(basename "$0") (bench/lib.sh): the default configuration.
[server]
listen = "127.0.0.1:0"

[storage]
url = "sqlite://inbox.db"
queue_capacity = 16384

[encryption]
$encryption

[[endpoint]]
id = "bench"
provider = "$provider"

[[endpoint.secret]]
version = "bench-1"
value = "$secret"
$extra
TOML
}

# bench_serve BIN DIR
# Starts `BIN/hookinbox serve` on DIR/bench.toml (see bench_config) at an
# ephemeral port on 127.0.0.1, its output in DIR/stdout and DIR/log, and
# waits for it to listen (at most 10 s). Sets `spid` (its PID, a child of
# the calling shell) and `URL` (http://127.0.0.1:PORT).
bench_serve() {
    local bin=$1 dir=$2
    "$bin/hookinbox" serve --config "$dir/bench.toml" --listen 127.0.0.1:0 >"$dir/stdout" 2>"$dir/log" &
    spid=$!
    for _ in $(seq 100); do grep -q listening "$dir/stdout" 2>/dev/null && break; sleep 0.1; done
    URL=$(grep -o 'http://[0-9.:]*' "$dir/stdout")
}
