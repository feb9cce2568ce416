"""The geometry of one answer of /api/graph (api.md): boxes inside the drawing and apart,
clusters around their boxes and apart from the rest, each edge a cubic Bezier spline from the
border of its `from` box to the border of its `to` box that passes through no other box.

    problems(answer) -> ["what is wrong", ...]   ([] when the drawing is sound)

Coordinates are pixels, rounded to 0.1 by the server: comparisons allow ROUNDING; an edge's end
may lie END_TOLERANCE off its box's border, and its curve may graze a box by SHRINK (the boxes
are shrunk by that much before the curve is tested against their insides).
"""
import math

ROUNDING = 0.5
END_TOLERANCE = 3.0
SHRINK = 2.0
SAMPLES = 24  # points tested on each Bezier segment


def rect(o):
    """(x1, y1, x2, y2) of a box or cluster."""
    return o["x"], o["y"], o["x"] + o["width"], o["y"] + o["height"]


def overlap(a, b):
    """Whether rectangles a and b share more than a sliver of inside."""
    return min(a[2], b[2]) - max(a[0], b[0]) > ROUNDING and \
        min(a[3], b[3]) - max(a[1], b[1]) > ROUNDING


def contains(outer, inner):
    return outer[0] - ROUNDING <= inner[0] and outer[1] - ROUNDING <= inner[1] and \
        inner[2] <= outer[2] + ROUNDING and inner[3] <= outer[3] + ROUNDING


def border_distance(p, r):
    """How far point p is from the border of rectangle r."""
    x, y = p
    if r[0] <= x <= r[2] and r[1] <= y <= r[3]:
        return min(x - r[0], r[2] - x, y - r[1], r[3] - y)
    return math.hypot(max(r[0] - x, 0, x - r[2]), max(r[1] - y, 0, y - r[3]))


def strictly_inside(p, r, margin):
    return r[0] + margin < p[0] < r[2] - margin and r[1] + margin < p[1] < r[3] - margin


def curve(points):
    """Points sampled along the cubic Bezier spline `points` (start, then 3 a segment)."""
    for k in range(0, len(points) - 3, 3):
        p0, p1, p2, p3 = points[k:k + 4]
        for s in range(SAMPLES + 1):
            t = s / SAMPLES
            a, b, c, d = (1 - t) ** 3, 3 * t * (1 - t) ** 2, 3 * t * t * (1 - t), t ** 3
            yield (a * p0[0] + b * p1[0] + c * p2[0] + d * p3[0],
                   a * p0[1] + b * p1[1] + c * p2[1] + d * p3[1])


def ancestors(clusters, c):
    """Cluster c and the clusters around it."""
    out = set()
    while c >= 0:
        out.add(c)
        c = clusters[c]["parent"]
    return out


def box_problems(d):
    boxes, clusters = d["boxes"], d["clusters"]
    rects = [rect(b) for b in boxes]
    frame = (0, 0, d["width"], d["height"])
    problems = [f"box {b['id']} {r} is outside the drawing {frame}"
                for b, r in zip(boxes, rects) if not contains(frame, r)]
    order = sorted(range(len(boxes)), key=lambda k: rects[k][0])
    for n, a in enumerate(order):  # a sweep along x: only boxes starting before a ends
        for b in order[n + 1:]:
            if rects[b][0] >= rects[a][2]:
                break
            if overlap(rects[a], rects[b]):
                problems.append(f"boxes {boxes[a]['id']} and {boxes[b]['id']} overlap")
    crects = [rect(c) for c in clusters]
    # A "flat" layout (api.md: dot routed an edge through a box with clusters) draws each
    # cluster around its boxes, where it may hold boxes and clusters of others.
    foreign = d["layout"] != "flat"
    if d["layout"] not in ("spline", "polyline", "ortho", "flat", "column"):
        problems.append(f"layout {d['layout']!r} is none of api.md's")
    for c, cr in enumerate(crects):
        if not contains(frame, cr):
            problems.append(f"cluster {clusters[c]['id']} is outside the drawing")
        for b, br in zip(boxes, rects):
            around = c in ancestors(clusters, b["cluster"])
            if around and not contains(cr, br):
                problems.append(f"cluster {clusters[c]['id']} does not hold its box {b['id']}")
            if foreign and not around and overlap(cr, br):
                problems.append(f"cluster {clusters[c]['id']} overlaps box {b['id']} of "
                                "another")
        for o in range(c + 1, len(clusters)):
            nested = c in ancestors(clusters, o)
            if nested and not contains(cr, crects[o]):
                problems.append(f"cluster {clusters[c]['id']} does not hold cluster "
                                f"{clusters[o]['id']}")
            if foreign and not nested and overlap(cr, crects[o]):
                problems.append(f"clusters {clusters[c]['id']} and {clusters[o]['id']} overlap")
    return problems


def edge_problems(d):
    boxes = d["boxes"]
    rects = [rect(b) for b in boxes]
    problems = []
    for e in d["edges"]:
        frm, to, points = e["from"], e["to"], e["points"]
        if not (0 <= frm < len(boxes) and 0 <= to < len(boxes)):
            problems.append(f"edge {frm} -> {to}: no such box")
            continue
        name = f"edge {boxes[frm]['id']} -> {boxes[to]['id']}"
        if len(points) < 4 or len(points) % 3 != 1:
            problems.append(f"{name}: {len(points)} points are no cubic Bezier spline")
            continue
        if border_distance(points[0], rects[frm]) > END_TOLERANCE:
            problems.append(f"{name} starts at {points[0]}, off its box {rects[frm]}")
        if border_distance(points[-1], rects[to]) > END_TOLERANCE:
            problems.append(f"{name} ends at {points[-1]}, off its box {rects[to]}")
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        near = [k for k, r in enumerate(rects) if k not in (frm, to) and r[0] < max(xs) and
                min(xs) < r[2] and r[1] < max(ys) and min(ys) < r[3]]
        if not near:
            continue
        for p in curve(points):
            hit = next((k for k in near if strictly_inside(p, rects[k], SHRINK)), None)
            if hit is not None:
                problems.append(f"{name} passes through box {boxes[hit]['id']} at "
                                f"({p[0]:.1f}, {p[1]:.1f})")
                break
    return problems


def problems(d):
    """Every geometric problem of the drawing `d` (at most 10 of each kind)."""
    return box_problems(d)[:10] + edge_problems(d)[:10]
