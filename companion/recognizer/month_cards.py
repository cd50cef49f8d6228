"""Finding the four cards of a month's teaching photo, knowing what the photo must show: four
cards of one size and one deck, lying in a row or a 2x2, each a rectangle of a Hanafuda card's
aspect (54 x 33 mm).

``rectangles.find_cards`` proposes the cards it outlines by shape alone. A proposal that is two
to four cards lying close (one outline around them) is cut into its cards where a colour step
runs along every cut (``_split_merged``). Each side of each card is then moved onto the card's
cut edge (``snap_quad``): the outermost straight, sharp colour step that runs along most of the
side, with the table just outside it and the card inside (so a printed frame, a soft shadow, a
glare spot or a straight line of the table's pattern beside the card does not hold it), and
never one with a neighbouring card just outside. A card missing, or one whose shape is not the
others', is looked for where the others say it lies (a step along the row, the corner left of
a 2x2: ``_complete``). The cards are put in slot order: a row left to right, a 2x2 as a page is
read.

``MonthCards.sure`` says whether what was found can teach without a look: four cards, each
with its cut edge seen along most of each side, each of a card's aspect and of its
neighbour's. When it is not, what was found (``quads``, fewer than four where so, with
``layout`` and ``close``) is what the page shows the player to fix and what the sentence says.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from companion.recognizer.rectangles import (
    CARD_ASPECT,
    MIN_SCORE,
    card_score,
    find_cards,
    order_quad,
    side_support,
    table_colours,
    table_likeness,
)

CARDS = 4
WORK_SIDE = 1000  # the photo is searched at this long side (px)
SNAP_REACH = 0.1  # a side moves at most this share of the card's width onto the cut edge
SNAP_POINTS = 32  # points looked at along each side
# a side is on an edge where the colour steps across it at this share of its points
SIDE_SEEN = 0.6
# ... and half of each side of the four proposed by shape alone (``rectangles.side_support``)
PROPOSED_SEEN = 0.5
ASPECT_SPREAD = 0.15  # a card's seen aspect at most this share off a Hanafuda card's
NEIGHBOUR_SPREAD = 0.1  # ... and off its nearest neighbour's
ODD_ASPECT = 0.06  # a card this far off the others' median aspect is looked for again
SHARP_SHARE = 0.45  # a step over 2 px at least this share of the step over 8 px: sharp
OUTER_STRENGTH = 0.5  # an outer line is the card's edge if it steps this share of the best
TABLE_STEP_SLACK = 0.15  # lines this near the most table-outside, card-inside one are as good
MIN_STEP = 8.0  # Lab units: a smaller step is the grain of a table or of a card's ground
# a gap between two cards narrower than this share of a card's width: they lie too close
CLOSE_GAP = 0.08


@dataclass(frozen=True)
class MonthCards:
    """The cards of a month's photo in slot order (N,4,2 photo pixels: TL, TR, BR, BL as the
    card stands), how sure the finder is (``sure``: four cards that can teach as they are),
    how they lie (``layout``: "row", "2x2" or ""), each side's edge support (N,4) and whether
    some lay too close to tell apart at first (``close``)."""

    quads: np.ndarray
    sure: bool
    layout: str
    support: np.ndarray
    close: bool = False  # some cards lie so close that one outline held several

    def __len__(self) -> int:
        return len(self.quads)


def _lab_steps(lab: np.ndarray, quad: np.ndarray, reach: int, others=None, prob=None):
    """For each side of ``quad``, at ``SNAP_POINTS`` points along it and each offset
    -reach..reach along its outward normal: the colour step across it (Lab units between the
    pixels one either side) where that step is sharp (at least ``SHARP_SHARE`` of the step
    four pixels either side: a soft shadow's or glare's rim is not a card's cut edge), else 0:
    (4, offsets, points); the outward normals (4, 2) and the offsets."""
    h, w = lab.shape[:2]
    q = np.asarray(quad, np.float64)
    centre = q.mean(0)
    offsets = np.arange(-reach, reach + 1, dtype=np.float64)
    t = np.linspace(0.12, 0.88, SNAP_POINTS)
    steps = np.zeros((4, len(offsets), SNAP_POINTS), np.float32)
    # how table-like it is just outside minus just inside each offset's line (0 without prob)
    contrast = np.zeros((4, len(offsets), SNAP_POINTS), np.float32)
    normals = np.zeros((4, 2))

    def sample(p):
        x = np.clip(p[..., 0], 0, w - 1).astype(np.float32)
        y = np.clip(p[..., 1], 0, h - 1).astype(np.float32)
        return cv2.remap(lab, x, y, cv2.INTER_LINEAR)

    for side in range(4):
        a, b = q[side], q[(side + 1) % 4]
        d = b - a
        n = np.array([d[1], -d[0]]) / (np.linalg.norm(d) + 1e-9)
        if np.dot((a + b) / 2 - centre, n) < 0:
            n = -n
        normals[side] = n
        pts = a + t[:, None] * d  # (P, 2)
        at = pts[None] + offsets[:, None, None] * n  # (O, P, 2)
        near = np.linalg.norm(sample(at + n) - sample(at - n), axis=-1)
        far = np.linalg.norm(sample(at + 4 * n) - sample(at - 4 * n), axis=-1)
        step = np.where(near >= SHARP_SHARE * far, near, 0)
        if others is not None:  # a line with another card just outside is not this card's edge
            out = np.round(at + 2 * n).astype(int)
            x, y = np.clip(out[..., 0], 0, w - 1), np.clip(out[..., 1], 0, h - 1)
            step = np.where(others[y, x] > 0, 0, step)
        steps[side] = step
        if prob is not None:
            x_out, y_out = (at + 3 * n)[..., 0], (at + 3 * n)[..., 1]
            x_in, y_in = (at - 3 * n)[..., 0], (at - 3 * n)[..., 1]
            table = prob.astype(np.float32)
            outside = cv2.remap(
                table,
                np.clip(x_out, 0, w - 1).astype(np.float32),
                np.clip(y_out, 0, h - 1).astype(np.float32),
                cv2.INTER_LINEAR,
            )
            inside = cv2.remap(
                table,
                np.clip(x_in, 0, w - 1).astype(np.float32),
                np.clip(y_in, 0, h - 1).astype(np.float32),
                cv2.INTER_LINEAR,
            )
            contrast[side] = outside - inside  # fmt: skip
    return steps, normals, offsets, contrast


def snap_quad(
    lab: np.ndarray, quad: np.ndarray, reach: int | None = None, others=None, outermost=True,
    sides=(0, 1, 2, 3), known=None, prob=None,
):  # fmt: skip
    """``quad`` with each side moved (and turned a little) onto the outermost straight colour
    step that runs along most of it (``outermost`` False: the one along most of it), within
    ``reach`` px; and each side's support (the share of its points on that step). A side with
    no such step, or not in ``sides`` (its support taken from ``known``), stays where it was."""
    q = np.asarray(quad, np.float64)
    width = min(np.linalg.norm(q[1] - q[0]), np.linalg.norm(q[2] - q[1]))
    reach = reach or max(3, int(SNAP_REACH * width))
    steps, normals, offsets, contrast = _lab_steps(lab, q, reach, others, prob)
    # candidate lines: an offset at each end of the side, the points between on the line
    t = np.linspace(0.12, 0.88, SNAP_POINTS)
    ends = np.arange(len(offsets))
    i0 = ends[:, None, None]
    i1 = ends[None, :, None]
    idx = np.round(i0 + (i1 - i0) * t[None, None, :]).astype(int)  # (O, O, P)
    lines = []
    support = np.zeros(4, np.float32) if known is None else np.array(known, np.float32)
    for side in range(4):
        if side not in sides:
            lines.append(None)
            continue
        s = steps[side]  # (O, P)
        threshold = max(MIN_STEP, 0.35 * np.percentile(s, 90))
        # a step at a point counts within one pixel of the line
        best = s.copy()
        best[1:] = np.maximum(best[1:], s[:-1])
        best[:-1] = np.maximum(best[:-1], s[1:])
        along = best[idx, np.arange(SNAP_POINTS)[None, None, :]]  # (O, O, P)
        share = (along >= threshold).mean(-1)
        strength = np.median(along, axis=-1)
        # the outermost line among those seen along nearly as much of the side as the best
        top = share.max()
        if top < 0.3:
            lines.append(None)
            continue
        if outermost:
            # ... and as strong: a shadow's rim outside a card steps less than its cut edge
            good = share >= top - 0.12
            good &= strength >= OUTER_STRENGTH * strength[good].max()
            # ... with the table just outside it and the card inside, as far as their colours
            # tell: a straight line of the table's pattern beside the card has the table on
            # both sides, a printed frame the card on both
            table_step = contrast[side][idx, np.arange(SNAP_POINTS)[None, None, :]].mean(-1)
            good &= table_step >= table_step[good].max() - TABLE_STEP_SLACK
            outward = np.where(good, (i0 + i1)[..., 0].astype(float), -1)
            k0, k1 = np.unravel_index(np.argmax(outward), outward.shape)
        else:  # the best seen, nearest where the side was among equals
            centred = np.abs((i0 + i1)[..., 0] - 2 * reach)
            k0, k1 = np.unravel_index(np.argmax(share * 1000 - centred), share.shape)
        support[side] = share[k0, k1]
        a, b = q[side], q[(side + 1) % 4]
        n = normals[side]
        d = b - a
        lines.append((a + 0.12 * d + offsets[k0] * n, a + 0.88 * d + offsets[k1] * n))
    out = q.copy()
    for corner in range(4):
        prev = (corner - 1) % 4  # side prev ends at the corner, side ``corner`` starts there
        la, lb = lines[prev], lines[corner]
        if la is None and lb is None:
            continue
        la = la if la is not None else (q[prev], q[corner])
        lb = lb if lb is not None else (q[corner], q[(corner + 1) % 4])
        point = _intersect(la, lb)
        if point is not None and np.linalg.norm(point - q[corner]) < 2.5 * reach:
            out[corner] = point
    return out.astype(np.float32), support


def snap(lab: np.ndarray, quad: np.ndarray, others=None, reach: float = SNAP_REACH, prob=None):
    """``snap_quad`` reaching far where a side found no edge near, then once more near;
    ``others``: a mask of the other cards (their edges are not this card's)."""
    width = min(np.linalg.norm(quad[1] - quad[0]), np.linalg.norm(quad[2] - quad[1]))
    q, support = snap_quad(lab, quad, max(3, int(reach * width)), others, prob=prob)
    weak = tuple(int(i) for i in np.nonzero(support < SIDE_SEEN)[0])
    if weak:  # those sides' edges further: the best line there, not the outermost
        far, far_support = snap_quad(
            lab, q, max(4, int(2.5 * reach * width)), others, False, weak, support
        )
        if far_support.mean() > support.mean():
            q, support = far, far_support
    again, again_support = snap_quad(lab, q, 3, others, prob=prob)
    if again_support.mean() >= support.mean():
        q, support = again, again_support
    return order_quad(q), support


def _intersect(la, lb):
    (x1, y1), (x2, y2) = la
    (x3, y3), (x4, y4) = lb
    den = (x1 - x2) * (y3 - y4) - (y1 - y2) * (x3 - x4)
    if abs(den) < 1e-9:
        return None
    a = x1 * y2 - y1 * x2
    b = x3 * y4 - y3 * x4
    return np.array([(a * (x3 - x4) - (x1 - x2) * b) / den, (a * (y3 - y4) - (y1 - y2) * b) / den])


def _area(q) -> float:
    return float(cv2.contourArea(np.asarray(q, np.float32)))


def slot_order(quads: np.ndarray) -> tuple[np.ndarray, str]:
    """Indices of the quads in slot order and the layout: a row left to right as the cards
    lie (across their long axis), or a 2x2 read as a page (top row first)."""
    quads = np.asarray(quads, np.float64)
    down = (quads[:, 2] + quads[:, 3] - quads[:, 0] - quads[:, 1]).mean(0)
    down /= np.linalg.norm(down) + 1e-9
    right = np.array([-down[1], down[0]])
    if right[0] < 0:
        right = -right
    centres = quads.mean(1)
    height = np.mean([np.linalg.norm(q[3] - q[0]) for q in quads])
    across = centres @ down
    if len(quads) == CARDS and np.ptp(across) > 0.6 * height:
        rows = np.argsort(across)
        top, bottom = rows[:2], rows[2:]
        top = top[np.argsort(centres[top] @ right)]
        bottom = bottom[np.argsort(centres[bottom] @ right)]
        return np.concatenate([top, bottom]), "2x2"
    return np.argsort(centres @ right), "row" if len(quads) == CARDS else ""


def _blob_cards(unlike: np.ndarray, quads: list, card: tuple[float, float] | None) -> list:
    """Cards cut from blobs of ``unlike`` (the parts unlike the table) that no found card
    covers and that hold two to four cards lying close: each blob's minimum-area rectangle
    split along its long side into as many card-wide parts as fit."""
    covered = np.zeros_like(unlike)
    for q in quads:
        cv2.fillConvexPoly(covered, np.round(q).astype(np.int32), 1)
    free = unlike & (1 - cv2.dilate(covered, np.ones((5, 5), np.uint8)))
    free = cv2.morphologyEx(free, cv2.MORPH_OPEN, np.ones((5, 5), np.uint8))
    count, labels, stats, _ = cv2.connectedComponentsWithStats(free)
    out = []
    for i in range(1, count):
        if stats[i, cv2.CC_STAT_AREA] < 0.002 * unlike.size:
            continue
        pts = np.column_stack(np.nonzero(labels == i)[::-1]).astype(np.float32)
        (cx, cy), (rw, rh), angle = cv2.minAreaRect(pts)
        long, short = max(rw, rh), min(rw, rh)
        if cv2.contourArea(cv2.convexHull(pts)) < 0.8 * rw * rh:
            continue
        # a row of k cards: short side a card's height, long side k widths and gaps
        if card is not None:
            card_long, card_short = card
            if not 0.8 * card_long <= short <= 1.25 * card_long:
                continue
            k = int(round(long / (card_short * 1.1)))
        else:
            k = int(round(long / (short / CARD_ASPECT * 1.1)))
        if not 1 <= k <= CARDS:
            continue
        box = order_quad(cv2.boxPoints(((cx, cy), (rw, rh), angle)))  # long sides down
        # the row runs across the card: the box's short sides (TL-TR) hold the k cards
        tl, tr, br, bl = box.astype(np.float64)
        if np.linalg.norm(tr - tl) < np.linalg.norm(bl - tl):  # box upright: row runs down
            tl, tr, br, bl = bl, tl, tr, br
        for j in range(k):
            a, b = j / k, (j + 1) / k
            part = np.array([tl + (tr - tl) * a, tl + (tr - tl) * b, bl + (br - bl) * b,
                             bl + (br - bl) * a])  # fmt: skip
            out.append(order_quad(part))
    return out


def _others(shape, quads, skip=None) -> np.ndarray:
    mask = np.zeros(shape[:2], np.uint8)
    for i, q in enumerate(quads):
        if i != skip:
            cv2.fillConvexPoly(mask, np.round(order_quad(q)).astype(np.int32), 1)
    return cv2.dilate(mask, np.ones((3, 3), np.uint8))


def _overlaps(quad, quads) -> bool:
    centre = quad.mean(0)
    for other in quads:
        if cv2.pointPolygonTest(other.astype(np.float32), tuple(map(float, centre)), False) >= 0:
            return True
        if (
            cv2.pointPolygonTest(quad.astype(np.float32), tuple(map(float, other.mean(0))), False)
            >= 0
        ):
            return True
    return False


def _complete(lab: np.ndarray, cards: list, prob: np.ndarray) -> list:
    """Fewer than four cards found: the missing ones looked for where the layout puts them
    (beside a card found, a step along the row; in a 2x2 the corner left), each such place
    snapped to the edges there; the best supported that overlap no card are added."""
    h, w = lab.shape[:2]
    while 0 < len(cards) < CARDS:
        quads = np.array([q for q, _ in cards], np.float64)
        down = (quads[:, 2] + quads[:, 3] - quads[:, 0] - quads[:, 1]).mean(0)
        down /= np.linalg.norm(down) + 1e-9
        right = np.array([-down[1], down[0]])
        card_w = float(np.median(np.linalg.norm(quads[:, 1] - quads[:, 0], axis=1)))
        card_h = float(np.median(np.linalg.norm(quads[:, 3] - quads[:, 0], axis=1)))
        centres = quads.mean(1)
        u, v = centres @ right, centres @ down
        step = 1.3 * card_w
        if len(cards) >= 2:
            du = np.abs(u[:, None] - u[None, :])
            near = du[(du > 0.9 * card_w) & (np.abs(v[:, None] - v[None, :]) < 0.5 * card_h)]
            if near.size:
                step = float(near.min())
        two_rows = np.ptp(v) > 0.6 * card_h
        vstep = float(np.ptp(v)) if two_rows else 1.25 * card_h
        moves = [(-step, 0.0), (step, 0.0)]
        if two_rows or len(cards) <= 2:
            moves += [(du, dv) for dv in (-vstep, vstep) for du in (-step, 0.0, step)]
        others = _others(lab.shape, quads)
        tried = []
        for quad in quads:
            for du, dv in moves:
                place = quad + du * right + dv * down
                if (
                    (place.min(0) < -0.05 * card_h).any()
                    or (place[:, 0] > w * 1.02).any()
                    or (place[:, 1] > h * 1.02).any()
                ):
                    continue
                if _overlaps(place, quads) or any(_overlaps(place, [t]) for t in tried):
                    continue
                tried.append(place)
        best = None
        for place in tried:
            q, support = snap(lab, place.astype(np.float32), others, 0.2, prob)
            area = _area(q)
            if not (card_w * card_h / 1.4 <= area <= card_w * card_h * 1.4):
                continue
            if _overlaps(q, quads) or support.min() < 0.5:
                continue
            if card_score(prob, q) < MIN_SCORE:  # a patch of the table's own pattern
                continue
            if best is None or support.mean() > best[1].mean():
                best = (q, support)
        if best is None:
            break
        cards = cards + [best]
    return cards


def _aspects(quads: np.ndarray) -> np.ndarray:
    widths = (np.linalg.norm(quads[:, 1] - quads[:, 0], axis=1)
              + np.linalg.norm(quads[:, 2] - quads[:, 3], axis=1)) / 2  # fmt: skip
    heights = (np.linalg.norm(quads[:, 3] - quads[:, 0], axis=1)
               + np.linalg.norm(quads[:, 2] - quads[:, 1], axis=1)) / 2  # fmt: skip
    return heights / widths


def _redo_odd_ones(lab: np.ndarray, cards: list, prob: np.ndarray, proposals: dict) -> list:
    """Four cards, one of which does not show its edges or the others' shape (snapped onto the
    wrong line, or its proposal was off: the table's pattern, two cards' outline): that one
    taken as first proposed (``proposals``: the snapped quad's id -> the proposal), else looked
    for again where the other three say it lies (``_complete``); kept where it then shows its
    edges and the others' shape."""
    quads = np.array([q for q, _ in cards], np.float64)
    aspects = _aspects(quads)
    odd = [
        i
        for i, (_, support) in enumerate(cards)
        if support.min() < SIDE_SEEN or abs(aspects[i] / np.median(aspects) - 1) > ODD_ASPECT
    ]
    if len(odd) != 1:
        return cards
    rest = [c for i, c in enumerate(cards) if i != odd[0]]
    usual = float(np.median(np.delete(aspects, odd[0])))
    tries = []
    proposal = proposals.get(id(cards[odd[0]][0]))
    if proposal is not None:
        others = _others(lab.shape, [q for q, _ in rest])
        q, support = snap_quad(lab, proposal, 3, others, prob=prob)
        tries.append([*rest, (order_quad(q), support)])
    tries.append(_complete(lab, rest, prob))
    for again in tries:
        if len(again) != CARDS:
            continue
        q, support = again[-1]
        aspect = _aspects(np.asarray(q, np.float64)[None])[0]
        if support.min() >= SIDE_SEEN and abs(aspect / usual - 1) <= ODD_ASPECT:
            return again
    return cards


def _one_size(quads: np.ndarray) -> bool:
    """Whether each card has a card's aspect (within ``ASPECT_SPREAD``) and the aspect its
    nearest neighbour shows (within ``NEIGHBOUR_SPREAD``: one deck, one shape; a tilted phone
    changes the aspect little from one card to the next, a side put on the wrong edge much)."""
    widths = (np.linalg.norm(quads[:, 1] - quads[:, 0], axis=1)
              + np.linalg.norm(quads[:, 2] - quads[:, 3], axis=1)) / 2  # fmt: skip
    heights = (np.linalg.norm(quads[:, 3] - quads[:, 0], axis=1)
               + np.linalg.norm(quads[:, 2] - quads[:, 1], axis=1)) / 2  # fmt: skip
    aspect = heights / widths
    if (np.abs(aspect / CARD_ASPECT - 1) > ASPECT_SPREAD).any():
        return False
    centres = quads.mean(1)
    apart = np.linalg.norm(centres[:, None] - centres[None], axis=-1)
    np.fill_diagonal(apart, np.inf)
    nearest = apart.argmin(1)
    return bool((np.abs(aspect / aspect[nearest] - 1) <= NEIGHBOUR_SPREAD).all())


def _divider_support(lab: np.ndarray, a, b, reach: int) -> float:
    """How much of the segment a-b (give or take ``reach`` px across it) runs along a colour
    step: the best share of its points on one, over the lines parallel to it."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    d = b - a
    n = np.array([d[1], -d[0]]) / (np.linalg.norm(d) + 1e-9)
    # a thin quad whose first side is a-b: its steps across that side
    steps, _, _, _ = _lab_steps(lab, np.array([a, b, b - 20 * n, a - 20 * n]), reach)
    s = steps[0]
    threshold = max(MIN_STEP, 0.35 * np.percentile(s, 90))
    return float((s >= threshold).mean(-1).max())


def _grid_part(quad: np.ndarray, rows: int, cols: int, r: int, c: int) -> np.ndarray:
    """Part (r, c) of ``quad`` (TL, TR, BR, BL) cut into rows x cols."""
    tl, tr, br, bl = np.asarray(quad, np.float64)

    def at(u, v):
        top, bottom = tl + (tr - tl) * u, bl + (br - bl) * u
        return top + (bottom - top) * v

    return order_quad(
        [at(c / cols, r / rows), at((c + 1) / cols, r / rows),
         at((c + 1) / cols, (r + 1) / rows), at(c / cols, (r + 1) / rows)]
    )  # fmt: skip


def _split_merged(lab: np.ndarray, quad: np.ndarray, card_area: float | None) -> list:
    """A found rectangle that is two to four cards lying close (one outline around them) cut
    into its cards: into k parts along its long side (a row) or into 2x2, where each part has a
    card's aspect (and size, where other cards say it), and a colour step runs along most of
    every cut; else [quad]."""
    q = np.asarray(quad, np.float64)  # TL, TR, BR, BL with the long sides down
    tl, tr, br, bl = q
    short = (np.linalg.norm(tr - tl) + np.linalg.norm(br - bl)) / 2
    long = (np.linalg.norm(bl - tl) + np.linalg.norm(br - tr)) / 2
    area = _area(q)
    best, best_support = [q.astype(np.float32)], 0.0
    for rows, cols in ((2, 1), (3, 1), (4, 1), (1, 2), (2, 2)):  # rows down the long side
        part_long, part_short = long / rows, short / cols
        aspect = max(part_long, part_short) / min(part_long, part_short)
        if not CARD_ASPECT / 1.25 <= aspect <= CARD_ASPECT * 1.2:
            continue
        if card_area is not None and not 0.6 <= area / (rows * cols) / card_area <= 1.6:
            continue
        reach = max(3, int(0.2 * min(part_long, part_short)))
        cuts = [(tl + (bl - tl) * r / rows, tr + (br - tr) * r / rows) for r in range(1, rows)]
        cuts += [(tl + (tr - tl) * c / cols, bl + (br - bl) * c / cols) for c in range(1, cols)]
        support = min(_divider_support(lab, a, b, reach) for a, b in cuts)
        if support >= 0.5 and support > best_support:
            best = [_grid_part(q, rows, cols, r, c) for r in range(rows) for c in range(cols)]
            best_support = support
    return best


def _gaps(quads: np.ndarray) -> np.ndarray:
    """Each card's distance to its nearest neighbour's outline (px; inf alone)."""
    out = np.full(len(quads), np.inf)
    for i, quad in enumerate(quads):
        for j, other in enumerate(quads):
            if i != j:
                contour = other.astype(np.float32).reshape(-1, 1, 2)
                apart = min(-cv2.pointPolygonTest(contour, (float(x), float(y)), True)
                            for x, y in _edge_points(quad))  # fmt: skip
                out[i] = min(out[i], max(apart, 0.0))
    return out


def _edge_points(quad: np.ndarray, per_side: int = 8):
    q = np.asarray(quad, np.float64)
    t = np.linspace(0, 1, per_side, endpoint=False)[:, None]
    return np.concatenate([q[k] + t * (q[(k + 1) % 4] - q[k]) for k in range(4)])


def _prepare(bgr: np.ndarray):
    """The photo as it is searched: its scale, the picture at ``WORK_SIDE``, its Lab colours
    (a little smoothed) and how table-like each pixel is."""
    h, w = bgr.shape[:2]
    scale = min(1.0, WORK_SIDE / max(h, w))
    img = cv2.resize(bgr, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
    lab = cv2.cvtColor(cv2.GaussianBlur(img, (0, 0), 0.7), cv2.COLOR_BGR2Lab).astype(np.float32)
    return scale, img, lab, table_likeness(img)


def find_month_cards(bgr: np.ndarray) -> MonthCards:
    """The four cards of a month's photo (see the module)."""
    scale, img, lab, prob = _prepare(bgr)
    return _find(img, lab, prob, list(find_cards(img).quads), scale)


def _find(img, lab, prob, quads: list, scale: float) -> MonthCards:
    proposed = np.array(quads, np.float32).reshape(-1, 4, 2)
    merged = False
    # a rectangle around two to four cards lying close is cut into its cards
    if len(quads) < CARDS:
        areas = sorted((_area(q) for q in quads), reverse=True)
        card_area = float(np.median(areas[1:])) if len(areas) >= 3 else None
        cut = []
        for q in quads:
            parts = _split_merged(lab, q, card_area)
            if len(parts) > 1:  # kept where each part then shows a card's edges
                tried = [
                    snap(lab, p, _others(lab.shape, parts, skip=i), prob=prob)
                    for i, p in enumerate(parts)
                ]
                if min(support.mean() for _, support in tried) < SIDE_SEEN:
                    parts = [q]
                else:
                    merged = True
            cut += parts
        quads = cut
    # cards of another size than the others (a printed frame, two cards in one outline) wait
    snapped = []
    for i, q in enumerate(quads):
        snapped.append(snap(lab, q, _others(lab.shape, quads, skip=i), prob=prob))
    # again, each beside the others as snapped: a card's edge is never inside its neighbour
    first = [q for q, _ in snapped]
    snapped = [
        snap(lab, q, _others(lab.shape, first, skip=i), prob=prob) for i, q in enumerate(quads)
    ]
    proposals = {id(q): raw for (q, _), raw in zip(snapped, quads, strict=True)}
    quads = [q for q, _ in snapped]
    if len(quads) >= 2:
        areas = np.array([_area(q) for q in quads])
        typical = np.median(areas[np.argsort(-areas)[: min(len(areas), CARDS)]])
        keep = [i for i, a in enumerate(areas) if typical / 1.6 <= a <= typical * 1.6]
        snapped = [snapped[i] for i in keep]
        quads = [quads[i] for i in keep]
    if len(quads) < CARDS:
        common = table_colours(img)
        unlike = (cv2.blur(common, (7, 7)) < 0.2).astype(np.uint8)
        card = None
        if quads:
            card = (
                float(np.median([np.linalg.norm(q[3] - q[0]) for q in quads])),
                float(np.median([np.linalg.norm(q[1] - q[0]) for q in quads])),
            )
        for part in _blob_cards(unlike, quads, card):
            snapped.append(snap(lab, part, _others(lab.shape, quads), prob=prob))
            quads.append(snapped[-1][0])
    if len(snapped) < CARDS:
        snapped = _complete(lab, snapped, prob)
    if len(snapped) == CARDS:
        snapped = _redo_odd_ones(lab, snapped, prob, proposals)
    if len(snapped) > CARDS:  # the four that best show their edges
        best = np.argsort([-s.mean() for _, s in snapped])[:CARDS]
        snapped = [snapped[i] for i in sorted(best)]
    quads_arr = np.array([q for q, _ in snapped], np.float32).reshape(-1, 4, 2)
    support = np.array([s for _, s in snapped], np.float32).reshape(-1, 4)
    layout = ""
    if len(quads_arr):
        order, layout = slot_order(quads_arr)
        quads_arr, support = quads_arr[order], support[order]
    sure = len(quads_arr) == CARDS and bool((support >= SIDE_SEEN).all())
    sure = sure and _one_size(quads_arr)
    if not sure and len(proposed) == CARDS and _one_size(proposed):
        # the four outlined by shape alone, of one shape, each edge seen along its sides: as
        # they were proposed (a snapped side that went astray is no reason to doubt them)
        seen = side_support(img, proposed)
        if seen.min() >= PROPOSED_SEEN:
            order, layout = slot_order(proposed)
            quads_arr, support, sure = proposed[order], seen[order], True
    widths = np.linalg.norm(quads_arr[:, 1] - quads_arr[:, 0], axis=1) if len(quads_arr) else []
    close = merged or bool(
        len(quads_arr) > 1 and (_gaps(quads_arr) < CLOSE_GAP * np.median(widths)).any()
    )
    return MonthCards(quads_arr / scale, sure, layout, support, close)


# -- the cards around the points the player tapped ---------------------------------------------

TAP_REACH = 0.3  # a card placed at a tap moves its sides at most this share of its width


def _contains(quad, point) -> bool:
    contour = np.asarray(quad, np.float32).reshape(-1, 1, 2)
    return cv2.pointPolygonTest(contour, (float(point[0]), float(point[1])), False) >= 0


def _tap_frame(taps: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, float]:
    """The way the cards stand and their size, guessed from four taps alone: a row's cards stand
    across it, a 2x2's long side runs along its longer spacing. (right, down, width, height)."""
    centred = taps - taps.mean(0)
    _, spread, axes = np.linalg.svd(centred, full_matrices=False)
    along, across = axes[0], axes[1]
    u, v = centred @ along, centred @ across
    if np.ptp(v) > 0.35 * np.ptp(u):  # two rows of two
        pairs = np.argsort(v)
        top, bottom = taps[pairs[:2]], taps[pairs[2:]]
        side = (np.linalg.norm(top[1] - top[0]) + np.linalg.norm(bottom[1] - bottom[0])) / 2
        drop = float(np.linalg.norm(top.mean(0) - bottom.mean(0)))
        if drop >= side:  # rows a card's height apart: the cards stand along the columns
            down, width = bottom.mean(0) - top.mean(0), side
        else:
            down, width = top[1] - top[0], drop
        width /= 1.15
    else:
        spacing = float(np.median(np.diff(np.sort(u))))
        down, width = across, spacing / 1.2
    down = down / (np.linalg.norm(down) + 1e-9)
    if down[1] < 0:
        down = -down
    right = np.array([-down[1], down[0]])
    if right[0] < 0:
        right = -right
    return right, down, width, width * CARD_ASPECT


def _placed(tap, right, down, width: float, height: float) -> np.ndarray:
    half_w, half_h = right * width / 2, down * height / 2
    return order_quad(
        [tap - half_w - half_h, tap + half_w - half_h, tap + half_w + half_h,
         tap - half_w + half_h]
    )  # fmt: skip


def cards_around(bgr: np.ndarray, taps) -> MonthCards:
    """The four cards whose middles the player tapped (``taps``: four (x, y) photo pixels, in
    any order), knowing that they are four cards of one size: first the cut edges looked for
    around each tap, the four cards' sizes chosen together (``_cards_by_profiles``); where
    that is unsure, the finder's cards holding a tap (``_cards_from_finder``). ``sure`` where
    each shows its edges and the four are of one size; where not, ``quads`` are still four
    outlines, one at each tap, for the player to drag."""
    scale, img, lab, prob = _prepare(bgr)
    taps = np.asarray(taps, np.float64).reshape(CARDS, 2) * scale
    profiled = _cards_by_profiles(lab, taps)
    if profiled.sure:
        return MonthCards(profiled.quads / scale, True, profiled.layout, profiled.support)
    found = _cards_from_finder(img, lab, prob, taps)
    chosen = found if found.sure or found.support.mean() > profiled.support.mean() else profiled
    return MonthCards(chosen.quads / scale, chosen.sure, chosen.layout, chosen.support)


def _cards_from_finder(img, lab, prob, taps: np.ndarray) -> MonthCards:
    """The four cards at ``taps`` (work pixels): each tap's card is the finder's card holding
    that tap alone, else a card of the others' size and turn placed at the tap and moved onto
    the cut edges there (``snap``)."""
    proposed = list(find_cards(img).quads)
    found = _find(img, lab, prob, list(proposed), 1.0)
    # the finder's own cards first (their sides are on the cut edges), then shape alone's
    candidates = [(q, s) for q, s in zip(found.quads, found.support, strict=True)]
    candidates += [(q, None) for q in proposed]
    picked: dict[int, tuple] = {}
    for quad, support in candidates:
        holds = [i for i, t in enumerate(taps) if _contains(quad, t)]
        aspect = _aspects(np.asarray(quad, np.float64)[None])[0]
        if len(holds) != 1 or holds[0] in picked or abs(aspect / CARD_ASPECT - 1) > ASPECT_SPREAD:
            continue
        if support is None:
            quad, support = snap(lab, quad, prob=prob)
        picked[holds[0]] = (order_quad(quad), np.asarray(support, np.float32))
    if picked:  # one size, as the cards the finder outlined show it
        quads = np.array([q for q, _ in picked.values()], np.float64)
        down = (quads[:, 2] + quads[:, 3] - quads[:, 0] - quads[:, 1]).sum(0)
        down /= np.linalg.norm(down) + 1e-9
        right = np.array([-down[1], down[0]])
        width = float(np.median((np.linalg.norm(quads[:, 1] - quads[:, 0], axis=1)
                                 + np.linalg.norm(quads[:, 2] - quads[:, 3], axis=1)) / 2))
        height = float(np.median((np.linalg.norm(quads[:, 3] - quads[:, 0], axis=1)
                                  + np.linalg.norm(quads[:, 2] - quads[:, 1], axis=1)) / 2))
        # a card far off the others' size is no card of this deck (two cards, a printed frame)
        for i, (q, _) in list(picked.items()):
            if not 0.7 <= _area(q) / (width * height) <= 1.4:
                del picked[i]
    if not picked:
        right, down, width, height = _tap_frame(taps)
    cards: list = [None] * CARDS
    for i, card in picked.items():
        cards[i] = card
    for i in range(CARDS):
        if cards[i] is not None:
            continue
        place = _placed(taps[i], right, down, width, height)
        others = _others(lab.shape, [c[0] for c in cards if c is not None])
        q, support = snap(lab, place.astype(np.float32), others, TAP_REACH, prob)
        if not _contains(q, taps[i]) or not 0.6 <= _area(q) / (width * height) <= 1.6:
            q, support = place.astype(np.float32), np.zeros(4, np.float32)
        cards[i] = (q, support)
    # once more for a card unlike the rest: placed at its tap at the others' size, near only
    quads = np.array([q for q, _ in cards], np.float64)
    for i in range(CARDS):
        q, support = cards[i]
        rest = np.delete(quads, i, axis=0)
        usual = float(np.median([_area(r) for r in rest]))
        if support.min() >= SIDE_SEEN and abs(_area(q) / usual - 1) <= 0.2:
            continue
        r_w = float(np.median(np.linalg.norm(rest[:, 1] - rest[:, 0], axis=1)))
        r_h = float(np.median(np.linalg.norm(rest[:, 3] - rest[:, 0], axis=1)))
        place = _placed(taps[i], right, down, r_w, r_h)
        again, again_support = snap(lab, place.astype(np.float32), _others(lab.shape, rest),
                                    SNAP_REACH, prob)  # fmt: skip
        if _contains(again, taps[i]) and again_support.mean() > support.mean():
            cards[i] = (again, again_support)
            quads[i] = again
    return _four_cards(cards)


def _four_cards(cards) -> MonthCards:
    """Four (quad, side support) found at the taps, in slot order: sure where every side shows,
    the four are of one size and none overlaps another."""
    quads = np.array([q for q, _ in cards], np.float32)
    support = np.array([s for _, s in cards], np.float32)
    order, layout = slot_order(quads)
    quads, support = quads[order], support[order]
    apart = not any(_overlaps(quads[i], np.delete(quads, i, axis=0)) for i in range(CARDS))
    sure = bool((support >= SIDE_SEEN).all()) and _one_size(quads) and apart
    return MonthCards(quads, sure, layout, support)

# -- the cut edges around four taps, the four cards' sizes chosen together ---------------------

PROFILE_POINTS = 24  # points along the segment a line is looked for on
PROFILE_SPAN = 0.3  # ... reaching this share of the smallest card either way of the tap
TAP_TURNS = np.radians(np.arange(-6.0, 6.1, 2.0))  # a card turned this much off the taps' frame
TAP_OFF = 0.3  # a tap this share of a card's size off its middle is still on it
# the camera's tilt makes the far cards smaller: sizes growing by up to this share a spacing
# across the table, each card within SIZE_SLACK of that
TAP_GROWTH = np.linspace(-0.12, 0.12, 7)
SIZE_SLACK = 0.04
SIZE_TIE = 0.15  # sizes scoring this near the best (of 16 sides) are as good: the outermost wins


def _sample(image: np.ndarray, points: np.ndarray) -> np.ndarray:
    h, w = image.shape[:2]
    x = np.clip(points[..., 0], 0, w - 1).astype(np.float32)
    y = np.clip(points[..., 1], 0, h - 1).astype(np.float32)
    return cv2.remap(image, x, y, cv2.INTER_LINEAR)


def _line_profile(lab, tap, across, along, reach: int, half: float):
    """Lines across ``across`` at each offset -reach..reach from ``tap``, each a segment
    ``half`` px either way along ``along``: the mean colour step across each (Lab, the far
    side minus the near, (O, 3)) and the share of its points that step that way (O,); each
    offset takes the best of its own and its neighbours' (a side a little turned)."""
    offsets = np.arange(-reach, reach + 1, dtype=np.float64)
    t = np.linspace(-half, half, PROFILE_POINTS)
    points = tap + offsets[:, None, None] * across + t[None, :, None] * along
    steps = _sample(lab, points + 2 * across) - _sample(lab, points - 2 * across)  # (O, P, 3)
    mean = steps.mean(1)
    size = np.linalg.norm(mean, axis=-1)
    unit = mean / (size[:, None] + 1e-6)
    share = ((steps * unit[:, None]).sum(-1) >= np.maximum(0.5 * size, MIN_STEP / 2)[:, None])
    share = share.mean(1)
    strength = size * share
    best = np.argmax(np.stack([np.roll(strength, k) for k in (-1, 0, 1)]), 0)
    take = np.clip(np.arange(len(offsets)) - (best - 1), 0, len(offsets) - 1)
    return mean[take], strength[take]


def _edge_pairs(profile, sizes: np.ndarray, ref: float):
    """For each card size: the best two lines that far apart around the tap (their strengths
    over ``ref``, where both step the same way from the card out to the table) and the
    card's middle there (offset from the tap)."""
    mean, strength = profile
    n = len(strength)
    reach = (n - 1) // 2
    shifts = np.arange(n) - reach
    score = np.full(len(sizes), -1.0)
    where = np.zeros(len(sizes))
    for k, size in enumerate(sizes):
        near = np.round(shifts - size / 2).astype(int) + reach
        far = np.round(shifts + size / 2).astype(int) + reach
        ok = (near >= 0) & (far < n) & (np.abs(shifts) <= TAP_OFF * size)
        if not ok.any():
            continue
        near, far = np.clip(near, 0, n - 1), np.clip(far, 0, n - 1)
        out_near, out_far = -mean[near], mean[far]  # each side's step from inside to outside
        agree = (out_near * out_far).sum(-1) / (
            np.linalg.norm(out_near, axis=-1) * np.linalg.norm(out_far, axis=-1) + 1e-6
        )
        value = np.where(ok & (agree > 0.3), (strength[near] + strength[far]) / ref, -1)
        best = int(np.argmax(value))
        score[k], where[k] = value[best], shifts[best]
    return score, where


def _turned(v: np.ndarray, angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    return np.array([c * v[0] - s * v[1], s * v[0] + c * v[1]])


def _cards_by_profiles(lab: np.ndarray, taps: np.ndarray) -> MonthCards:
    """The four cards around ``taps`` (work pixels) found by their cut edges: around each tap,
    turned a little, the straight colour steps across lines parallel to a card's sides; each
    card's two pairs of sides are the strongest lines a card's width and height apart that
    step the same way out; the four cards' sizes chosen together (one size, as a tilted
    camera makes it grow across the table: ``TAP_GROWTH``), the outermost among near-equals
    (a printed frame inside the cut edge steps as much); each card then fitted to its edges
    (``snap_quad``, a few px)."""
    right, down, guess, _ = _tap_frame(taps)
    u, v = taps @ right, taps @ down
    du, dv = np.abs(u[:, None] - u[None]), np.abs(v[:, None] - v[None])
    beside = du[(du > 0) & (dv < 0.5 * du)]
    spacing = float(beside.min()) if beside.size else 1.2 * guess
    above = dv[(dv > 0) & (du < 0.5 * dv)]
    widths = np.arange(max(8, int(0.5 * spacing)), int(1.02 * spacing) + 1)
    if above.size:  # a 2x2: the rows a card's height and a gap apart
        heights = np.arange(max(8, int(0.5 * above.min())), int(1.02 * above.min()) + 1)
    else:
        heights = np.arange(int(0.85 * CARD_ASPECT * widths[0]),
                            int(1.15 * CARD_ASPECT * widths[-1]) + 1)  # fmt: skip
    place = np.column_stack([(u - u.mean()) / spacing,
                             (v - v.mean()) / (float(above.min()) if above.size else spacing)])  # fmt: skip
    reach_x, reach_y = int(0.85 * spacing), int(0.6 * heights[-1]) + 2
    scores = np.zeros((CARDS, len(TAP_TURNS), len(heights), len(widths)), np.float32)
    middles = {}
    for i, tap in enumerate(taps):
        for a, turn in enumerate(TAP_TURNS):
            r, d = _turned(right, turn), _turned(down, turn)
            across = _line_profile(lab, tap, r, d, reach_x, PROFILE_SPAN * heights[0])
            updown = _line_profile(lab, tap, d, r, reach_y, PROFILE_SPAN * widths[0])
            ref = max(across[1].max(), updown[1].max(), 2 * MIN_STEP)
            sw, mw = _edge_pairs(across, widths, ref)
            sh, mh = _edge_pairs(updown, heights, ref)
            middles[i, a] = (mw, mh)
            scores[i, a] = sh[:, None] + sw[None, :]
    sizes, kh, kw = _joint_sizes(scores, widths, heights, place)
    cards = []
    for i, tap in enumerate(taps):
        (h0, h1), (w0, w1) = sizes[i]
        window = scores[i, :, h0:h1, w0:w1]
        a, hh, ww = np.unravel_index(int(np.argmax(window)), window.shape)
        hh, ww = hh + h0, ww + w0
        mw, mh = middles[i, a]
        r, d = _turned(right, TAP_TURNS[a]), _turned(down, TAP_TURNS[a])
        quad = _placed(tap + mw[ww] * r + mh[hh] * d, r, d, widths[ww], heights[hh])
        q, support = snap_quad(lab, quad, 3)
        cards.append((order_quad(q), support))
    return _four_cards(cards)


def _joint_sizes(scores: np.ndarray, widths, heights, place: np.ndarray):
    """Each card's window of sizes ((h0, h1), (w0, w1) indices): around one size that grows
    evenly across the table (``place``: each card's place along the two ways, in spacings),
    the one whose four cards' best scores within ``SIZE_SLACK`` add up most (the largest
    among those within ``SIZE_TIE``), of a card's aspect give or take a tilt's."""
    best_turn = scores.max(1)
    kw = max(1, int(2 * SIZE_SLACK * widths.mean())) | 1
    kh = max(1, int(2 * SIZE_SLACK * heights.mean())) | 1
    near = np.stack([cv2.dilate(b, np.ones((kh, kw), np.uint8)) for b in best_turn])
    aspect = heights[:, None] / widths[None, :]
    wrong_shape = (aspect < CARD_ASPECT * 0.85) | (aspect > CARD_ASPECT * 1.15)
    best = None
    for grow_u in TAP_GROWTH:
        for grow_v in TAP_GROWTH if np.ptp(place[:, 1]) > 0.3 else (0.0,):
            total = np.zeros_like(near[0])
            index = []
            for i in range(CARDS):
                f = 1 + grow_u * place[i, 0] + grow_v * place[i, 1]
                iw = np.clip(np.round(widths * f - widths[0]).astype(int), 0, len(widths) - 1)
                ih = np.clip(np.round(heights * f - heights[0]).astype(int), 0, len(heights) - 1)
                total += near[i][ih[:, None], iw[None, :]]
                index.append((ih, iw))
            total[wrong_shape] = -1
            if best is None or total.max() > best[0].max() + 1e-6:
                best = (total, index)
    total, index = best
    area = np.where(total >= total.max() - SIZE_TIE, heights[:, None] * widths[None, :], -1)
    hi, wi = np.unravel_index(int(np.argmax(area)), area.shape)
    out = []
    for ih, iw in index:
        h, w = int(ih[hi]), int(iw[wi])
        out.append(((max(0, h - kh // 2), h + kh // 2 + 1), (max(0, w - kw // 2), w + kw // 2 + 1)))
    return out, kh, kw
