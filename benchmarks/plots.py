"""The charts the benchmark scripts draw with --plot (PNG, matplotlib's Agg).

Every chart carries the line of `cpu_flags.cpu_description()` (date, CPU
model, cores, vector extensions) at its foot: a figure means something only
beside the machine it was measured on. Needs matplotlib (the [docs] extra).
"""

from cpu_flags import cpu_description


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(figure, path, note=None):
    caption = cpu_description() + (f"; {note}" if note else "")
    figure.text(0.01, 0.01, caption, fontsize=6, color="0.3")
    figure.tight_layout(rect=(0, 0.04, 1, 1))
    figure.savefig(path, dpi=120)
    pyplot().close(figure)
    print(f"plot: {path}", flush=True)


def bar_chart(path, title, groups, ylabel, errors=None, note=None, log=False):
    """Grouped bars: `groups` is {group: {series: value}} (one panel group per
    key, a bar per series, in insertion order); `errors` the same shape of
    (below, above) distances, drawn as error bars.

    Example:

    ```python
    bar_chart("speed.png", "MiniLM", {"inference": {"bert_tf": 49.0}}, "examples/s")
    ```
    """
    plt = pyplot()
    series = list(dict.fromkeys(s for values in groups.values() for s in values))
    width = 0.8 / max(len(series), 1)
    figure, axes = plt.subplots(
        figsize=(max(6.4, 1.4 * len(groups) * len(series) / 2), 4)
    )
    for index, name in enumerate(series):
        xs = [
            g + index * width
            for g, values in enumerate(groups.values())
            if name in values
        ]
        ys = [values[name] for values in groups.values() if name in values]
        yerr = None
        if errors:
            spans = [errors[g][name] for g in groups if name in groups[g]]
            yerr = [[b for b, _ in spans], [a for _, a in spans]]
        bars = axes.bar(xs, ys, width, label=name, yerr=yerr, capsize=3)
        axes.bar_label(bars, fmt="%.3g", fontsize=7, padding=2)
    axes.set_xticks([g + width * (len(series) - 1) / 2 for g in range(len(groups))])
    axes.set_xticklabels(list(groups))
    axes.set_ylabel(ylabel)
    if log:
        axes.set_yscale("log")
    axes.set_title(title, fontsize=10)
    axes.legend(fontsize=7)
    axes.grid(axis="y", alpha=0.3)
    save_figure(figure, path, note)


def line_chart(path, title, series, xlabel, ylabel, note=None):
    """Lines: `series` is {name: [(x, y), ...]}."""
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(6.4, 4))
    for name, points in series.items():
        axes.plot(
            [x for x, _ in points], [y for _, y in points], marker="o", label=name
        )
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.set_title(title, fontsize=10)
    if len(series) > 1:
        axes.legend(fontsize=7)
    axes.grid(alpha=0.3)
    save_figure(figure, path, note)
