#!/usr/bin/env python3
"""Bar charts of `xfiber bench --json` results: one panel per workload, a bar
per row (its mean) with the run-to-run standard deviation as error bars.
With the server workload, one more panel: tail latency against offered load,
a line per server (its mix-R%/SERVER rows: p99 of the short requests, the
median over the runs).

usage: plot.py RESULTS.json OUT.png   (xfiber bench --plot runs it for you)
"""
import json
import sys


def latency_curves(panels):
    """{server: [(load %, p99 us)]} from the server workload's mix rows."""
    curves = {}
    for w, rows in panels:
        if w["name"] != "server":
            continue
        for r in rows:
            name = r["name"]
            if not name.startswith("mix-") or "%/" not in name:
                continue
            load, server = name[4:].split("%/", 1)
            curves.setdefault(server, []).append((float(load), r["stats"]["median"]))
    return {k: sorted(v) for k, v in curves.items()}


def plot_curves(ax, curves):
    for server, points in sorted(curves.items()):
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=server)
    ax.set_yscale("log")
    ax.set_xlabel("offered load, % of the cooperative server's capacity", fontsize=8)
    ax.set_ylabel("p99 of short requests (us)", fontsize=8)
    ax.set_title("server: tail latency of /spin?us=10 among 0.5% /spin?us=5000, open loop",
                 fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)


def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: plot.py RESULTS.json OUT.png\n")
        return 2
    try:
        import matplotlib
    except ImportError:
        sys.stderr.write("plot.py needs matplotlib: apt-get install python3-matplotlib, "
                         "or pip install matplotlib\n")
        return 1
    matplotlib.use("Agg")  # files only: no display needed
    import matplotlib.pyplot as plt

    with open(argv[1]) as f:
        doc = json.load(f)
    panels = []
    for w in doc.get("workloads", []):
        rows = [r for r in w.get("rows", []) if r.get("samples")]
        if rows:
            panels.append((w, rows))
    if not panels:
        sys.stderr.write("plot.py: %s has no measured rows\n" % argv[1])
        return 1

    curves = latency_curves(panels)
    heights = [max(1.5, 0.28 * len(rows) + 1.0) for _, rows in panels]
    if curves:
        heights.append(4.0)
    fig, axes = plt.subplots(len(heights), 1, figsize=(10, sum(heights)),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    if curves:
        plot_curves(axes[-1, 0], curves)
    for ax, (w, rows) in zip(axes[:, 0], panels):
        names = [r["name"] + "  (" + r.get("pinning", "") + ")" for r in rows]
        means = [r["stats"]["mean"] for r in rows]
        errs = [r["stats"]["stddev"] for r in rows]
        colors = ["tab:blue" if r.get("kind") == "kernel" else
                  "tab:green" if r.get("kind") == "fiber" else "tab:orange" for r in rows]
        y = range(len(rows))
        ax.barh(y, means, xerr=errs, color=colors, capsize=3)
        positive = [m for m in means if m > 0]
        log = positive and max(positive) / min(positive) > 100
        if log:  # kernel switches beside Boost's: bars that differ 1000x need a log axis
            ax.set_xscale("log")
        ax.set_yticks(list(y))
        ax.set_yticklabels(names, fontsize=7)
        ax.invert_yaxis()
        better = "higher" if w.get("higher_is_better") else "lower"
        ax.set_title("%s: %s" % (w["name"], w.get("what", "")), fontsize=9)
        ax.set_xlabel("%s%s (%s is better); error bars: stddev of %d runs; blue kernel, "
                      "orange peers, green fibers"
                      % (w.get("unit", ""), ", log scale" if log else "", better,
                         max(len(r["samples"]) for r in rows)), fontsize=8)
        ax.grid(axis="x", alpha=0.3)
    x = doc.get("xfiber", {})
    m = doc.get("machine", {})
    fig.suptitle("xfiber %s (%s) on %s, Linux %s" % (x.get("version", "?"), x.get("commit", "?"),
                                                     m.get("cpu_model", "?"), m.get("kernel", "?")),
                 fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.4 / sum(heights)))
    fig.savefig(argv[2], dpi=100)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError) as e:
        # A file that cannot be read or written, or results of another shape
        # (a broken or foreign JSON): one line, not a traceback.
        sys.stderr.write("plot.py: %s: %s\n" % (type(e).__name__, e))
        sys.exit(1)
