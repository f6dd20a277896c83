#!/bin/sh
# mkman.sh BIN OUT: the dpsim(1) manual page, generated at build time from
# the binary's own --help texts (`dpsim --help` and `dpsim COMMAND --help`),
# so the manual and --help cannot drift apart.  The help text is kept as
# written (.nf), escaped for roff: backslashes, and lines starting with a
# dot or an apostrophe.
set -eu
BIN=$1
OUT=$2
esc() { sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"; }
version=$("$BIN" --version | sed 's/^dpsim //')
top=$("$BIN" --help)
cmds=$(printf '%s\n' "$top" | awk '/^commands:/ {on = 1; next} on && /^  [a-z]/ {print $1} on && /^$/ {exit}')
{
    printf '.TH DPSIM 1 "" "dpsim %s" "User Commands"\n' "$version"
    printf '.SH NAME\ndpsim \\- discrete-event simulator of data-parallel training on heterogeneous, geo-distributed devices\n'
    printf '.SH SYNOPSIS\n.B dpsim\n.I COMMAND\n[\\fIOPTIONS\\fR] [\\fIARGS\\fR]\n'
    printf '.SH DESCRIPTION\n.nf\n'
    printf '%s\n' "$top" | esc
    printf '.fi\n.SH COMMANDS\n'
    for c in $cmds; do
        printf '.SS %s\n.nf\n' "$c"
        "$BIN" "$c" --help | esc
        printf '.fi\n'
    done
    # ENVIRONMENT: the "environment:" block of `dpsim --help`, one .TP each
    printf '.SH ENVIRONMENT\n'
    printf '%s\n' "$top" | esc | awk '/^environment:/ {on = 1; next} on && /^$/ {exit}
        on && /^  [A-Z]/ {sub(/^  /, ""); n = index($0, "  "); if (n == 0) n = length($0) + 1;
            printf ".TP\n.B %s\n", substr($0, 1, n - 1); d = substr($0, n); sub(/^ +/, "", d); print d; next}
        on && /^   / {sub(/^ +/, ""); print; next}
        on {print ".PP"; print; exit}'
    cat <<'EX'
.SH EXAMPLES
.nf
dpsim reproduce table3 \-\-out table3/          # the paper's Table 3 and its plots
dpsim check scenarios/geo\-3sites.yaml          # validate and summarise a scenario
dpsim run scenarios/geo\-3sites.yaml            # every policy; stored in results.db
dpsim run scenarios/tiny.yaml \-p cadp \-\-set devices.cpu.link.down=20Mbps
dpsim runs \-\-last 5                            # the newest runs
dpsim plot compare \-\-out compare.png          # Tsend, Ttraining, Ttotal per policy
dpsim plot timeline \-\-run 3 \-\-out gantt.svg   # who waits for whom
dpsim sweep scenarios/tiny.yaml \-\-vary devices.cpu.link.down=1Mbps..100Mbps:log:5
dpsim plot sweep \-\-out sweep.png              # a panel per value of a second swept key
dpsim export \-\-trace 3 \-\-out run3.json        # for ui.perfetto.dev
.fi
EX
    printf '.SH FILES\n.TP\n.I results.db\nthe default results database (SQLite); its schema: sim/store/SCHEMA.md in the sources\n'
    printf '.SH SEE ALSO\n.BR gnuplot (1),\n.BR sqlite3 (1)\n'
} >"$OUT.tmp"
mv "$OUT.tmp" "$OUT"
