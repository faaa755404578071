# bench/quiet.sh — sourced by bench/run.sh and bench/purge.sh: the machine's
# CPU use, and waiting for it to calm down before a measurement (the machine
# is shared). Needs QUIET_WAIT (most seconds to wait) and QUIET_MAX (calm:
# under this % of all CPUs busy over one second).

# Busy and total jiffies of all CPUs, from /proc/stat.
machine_jiffies() {
    awk '/^cpu /{busy = $2 + $3 + $4 + $7 + $8 + $9; print busy, busy + $5 + $6}' /proc/stat
}

# Waits (at most QUIET_WAIT s) for a second in which under QUIET_MAX % of the
# CPUs were busy; prints the seconds waited and the last busy %.
wait_for_quiet() {
    local waited=0 b0 t0 b1 t1 pct
    while :; do
        read -r b0 t0 < <(machine_jiffies)
        sleep 1
        read -r b1 t1 < <(machine_jiffies)
        pct=$(((b1 - b0) * 100 / (t1 - t0 > 0 ? t1 - t0 : 1)))
        if ((pct < QUIET_MAX || waited >= QUIET_WAIT)); then
            echo "$waited $pct"
            return
        fi
        sleep 2
        waited=$((waited + 3))
    done
}
