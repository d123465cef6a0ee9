# SPDX-License-Identifier: GPL-2.0
"""What the reports of make bench (scripts/bench-report.py) and make meter
(scripts/meter-report.py) share: medians, ratio intervals, the standing of
a ratio against 1.00, number formats, Markdown rows, gnuplot and atomic
writes. Python's standard library only."""

import math
import os
import subprocess


def median(xs):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    n = len(xs)
    return xs[(n - 1) // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def div(a, b):
    return None if a is None or b is None or b == 0 else a / b


# Student's t, 97.5th percentile, by degrees of freedom (a two-sided 95%
# interval); beyond the table the normal's 1.96 is near enough.
T975 = [None, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
        2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
        2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def ratio_interval(ratios):
    """The pair ratios' geometric mean and its 95% confidence interval:
    Student's t on their logarithms. A round runs both sides (order flipped
    every round), so rounds are the independent samples; logs make 2x and
    0.5x equally far from 1, and the product of two slot/noise factors a
    sum. Returns (mean, low, high); low and high are None under 2 pairs."""
    xs = [math.log(r) for r in ratios if r is not None and r > 0]
    n = len(xs)
    if not n:
        return None, None, None
    m = sum(xs) / n
    if n < 2:
        return math.exp(m), None, None
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1))
    h = (T975[n - 1] if n - 1 < len(T975) else 1.96) * sd / math.sqrt(n)
    return math.exp(m), math.exp(m - h), math.exp(m + h)


def gmean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def standing(better, lo, hi):
    """ssdq against nvme by the interval: ahead, behind, or not
    distinguishable (the interval holds 1.00)."""
    if lo is None or hi is None:
        return None
    if lo > 1:
        return "ahead" if better == "higher" else "behind"
    if hi < 1:
        return "behind" if better == "higher" else "ahead"
    return "not distinguishable"


def gnuplot(script):
    subprocess.run(["gnuplot"], input=script, text=True, check=False)


def jround(x):
    return math.floor(x + 0.5) if x >= 0 else -math.floor(-x + 0.5)


def jnum(x):
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e17:
        return str(int(x))
    return str(x)


def fmt(x):
    if x is None:
        return "n/a"
    a = abs(x)
    if a >= 100:
        return jnum(jround(x))
    if a >= 10:
        return jnum(jround(x * 10) / 10)
    if a >= 1:
        return jnum(jround(x * 100) / 100)
    return jnum(jround(x * 1000) / 1000)


def r2(x):
    if x is None:
        return "n/a"
    n = int(jround(abs(x) * 100))
    return f"{'-' if x < 0 else ''}{n // 100}.{n % 100:02d}"


def interval(lo, hi):
    return "n/a" if lo is None or hi is None else f"{r2(lo)}-{r2(hi)}"


def row(*cells):
    """A Markdown table row (an empty last cell is "| |")."""
    text = "| " + " | ".join(cells) + " |"
    return text[:-4] + "| |" if cells[-1] == "" else text


def write(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)
