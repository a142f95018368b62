"""Nearest points, compiled: the coarse starts of the contact solves (kernels).

A cold start of a common-normal solve or of an element's ray needs, for many points, the nearest
of a window's points. The points go into a k-d tree (Bentley 1975: each node splits its points at
the median of its box's longest side, down to leaves of ``LEAF`` points; each node keeps its
points' bounding box), and each query descends it nearer child first, skipping every node whose box
is farther than the nearest point found so far. Exact (the nearest by Euclidean distance; of
equally near points, the one first in the tree's order), O(log n) a query.
"""

from __future__ import annotations

import math

import numpy as np

from simclient.geometry.kernels import helper, kernel

__all__ = ["nearest", "deepest"]

#: most points in a leaf of the tree
LEAF = 16
# a node: its points' range [start, end) in the tree's order, its children (-1: a leaf), its box
_START, _END, _LEFT, _RIGHT = range(4)


@helper
def _tree(points: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The k-d tree of ``points`` (m x 3): ``(order, nodes, boxes)``: the points' indices in the
    tree's order, each node's ``(start, end, left, right)`` and its box ``(lo, hi)`` (n x 6, m)."""
    m = points.shape[0]
    order = np.arange(m)
    size = 4 * (m // LEAF) + 4  # (leaves hold more than LEAF / 2 points: fewer than 2 m / LEAF + 1 of them)
    nodes = np.full((size, 4), -1, np.int64)
    boxes = np.empty((size, 6))
    stack = np.empty(size, np.int64)
    nodes[0, _START], nodes[0, _END] = 0, m
    count, top = 1, 1
    stack[0] = 0
    while top > 0:
        top -= 1
        node = stack[top]
        start, end = nodes[node, _START], nodes[node, _END]
        for a in range(3):
            boxes[node, a] = math.inf
            boxes[node, 3 + a] = -math.inf
        for k in range(start, end):
            for a in range(3):
                x = points[order[k], a]
                boxes[node, a] = min(boxes[node, a], x)
                boxes[node, 3 + a] = max(boxes[node, 3 + a], x)
        if end - start <= LEAF:
            continue
        dim = 0
        for a in range(1, 3):
            if boxes[node, 3 + a] - boxes[node, a] > boxes[node, 3 + dim] - boxes[node, dim]:
                dim = a
        part = order[start:end]
        order[start:end] = part[np.argsort(points[part, dim], kind="mergesort")]
        mid = (start + end) // 2
        for child, lo, hi in ((count, start, mid), (count + 1, mid, end)):
            nodes[child, _START], nodes[child, _END] = lo, hi
            stack[top] = child
            top += 1
        nodes[node, _LEFT], nodes[node, _RIGHT] = count, count + 1
        count += 2
    return order, nodes[:count], boxes[:count]


@helper(inline=True)
def _box_distance2(q: np.ndarray, boxes: np.ndarray, node: int) -> float:
    d2 = 0.0
    for a in range(3):
        gap = max(boxes[node, a] - q[a], q[a] - boxes[node, 3 + a], 0.0)
        d2 += gap * gap
    return d2


@helper
def _query(q: np.ndarray, points: np.ndarray, order: np.ndarray, nodes: np.ndarray, boxes: np.ndarray,
           stack: np.ndarray) -> int:
    """The index (in ``points``) of the point nearest ``q``."""
    best, best_d2 = -1, math.inf
    top = 1
    stack[0] = 0
    while top > 0:
        top -= 1
        node = stack[top]
        if _box_distance2(q, boxes, node) > best_d2:
            continue
        left, right = nodes[node, _LEFT], nodes[node, _RIGHT]
        if left < 0:
            for k in range(nodes[node, _START], nodes[node, _END]):
                p = order[k]
                d2 = 0.0
                for a in range(3):
                    d = points[p, a] - q[a]
                    d2 += d * d
                if d2 < best_d2:
                    best, best_d2 = p, d2
            continue
        # the nearer child on top of the stack: searched first, so the farther is mostly skipped
        if _box_distance2(q, boxes, left) <= _box_distance2(q, boxes, right):
            stack[top], stack[top + 1] = right, left
        else:
            stack[top], stack[top + 1] = left, right
        top += 2
    return best


@kernel("void(f8[:, ::1], f8[:, ::1], i8[::1])")
def nearest(points: np.ndarray, queries: np.ndarray, out: np.ndarray) -> None:
    """``out[k]``: the index of the point (a row of ``points``, m x 3, finite) nearest ``queries[k]``."""
    order, nodes, boxes = _tree(points)
    stack = np.empty(nodes.shape[0] + 2, np.int64)
    for k in range(queries.shape[0]):
        out[k] = _query(queries[k], points, order, nodes, boxes, stack)


@kernel("Tuple((i8, i8, f8))(f8[:, ::1], f8[:, ::1], f8[::1], f8[:, ::1], f8[:, ::1], f8[::1])")
def deepest(pi: np.ndarray, R_i: np.ndarray, c_i: np.ndarray, pj: np.ndarray, R_j: np.ndarray,
            c_j: np.ndarray) -> tuple[int, int, float]:
    """For every point of surface i (rows of a table's 14 values, placed by ``(R_i, c_i)``: a table
    point ``s`` at ``c + R s``) the nearest point of surface j's (``pj``, ``(R_j, c_j)``): the pair
    whose indentation along j's normal is largest, as ``(row of pi, row of pj, indentation in m)``;
    ``(-1, -1, nan)`` where a placed point is not finite, or the distances overflow."""
    n, m = pi.shape[0], pj.shape[0]
    Pi, Pj, Nj = np.empty((n, 3)), np.empty((m, 3)), np.empty((m, 3))
    for k in range(n):
        for a in range(3):
            Pi[k, a] = c_i[a] + R_i[a, 0] * pi[k, 2] + R_i[a, 1] * pi[k, 3] + R_i[a, 2] * pi[k, 4]
            if not math.isfinite(Pi[k, a]):
                return -1, -1, math.nan
    for k in range(m):
        for a in range(3):
            Pj[k, a] = c_j[a] + R_j[a, 0] * pj[k, 2] + R_j[a, 1] * pj[k, 3] + R_j[a, 2] * pj[k, 4]
            Nj[k, a] = R_j[a, 0] * pj[k, 5] + R_j[a, 1] * pj[k, 6] + R_j[a, 2] * pj[k, 7]
            if not math.isfinite(Pj[k, a]):
                return -1, -1, math.nan
    near = np.empty(n, np.int64)
    nearest(Pj, Pi, near)
    best, best_k, best_depth = -1, -1, -math.inf
    for k in range(n):
        q = near[k]
        if q < 0:  # (every distance overflowed)
            return -1, -1, math.nan
        depth = ((Pj[q, 0] - Pi[k, 0]) * Nj[q, 0] + (Pj[q, 1] - Pi[k, 1]) * Nj[q, 1]
                 + (Pj[q, 2] - Pi[k, 2]) * Nj[q, 2])
        if depth > best_depth or best < 0:
            best, best_k, best_depth = k, q, depth
    return best, best_k, best_depth
