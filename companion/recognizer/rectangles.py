"""Finding cards by their shape alone: a card is a rectangle of a known aspect (54 x 33 mm)
lying on a table, whatever is printed on it.

No net is involved, so this finds the cards of a deck no net has seen. Candidates come from
several outlines of the frame (Canny edges of each colour channel, the same after a median
filter, an adaptive threshold, and the parts of the frame unlike the table), at two scales;
each closed outline whose minimum-area rectangle has a card's aspect and fills it is a
candidate quad. The table is what the frame's border shows (``table_colours``: a colour
histogram of the border strip): a candidate scores by how much more table-like the ring just
outside it is than the band just inside it, so a card on the table scores near 1, a
rectangle drawn on a card's face (its printed frame) or on the table's texture near 0. The
best candidates that do not overlap are kept, a card's printed frame giving way to the card
around it, and each side is moved out to where the table begins.

Used to teach a deck from photos (``companion.recognizer.photos``) and, beside the
localizer, as a proposal source for the cards of a taught deck (``Recognizer.with_deck``).
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

CARD_ASPECT = 54.0 / 33.0  # a Hanafuda card's long side over its short side
WORK_SIDE = 800  # frames are searched at this long side (px): finer costs time, coarser detail
# a candidate's minimum-area rectangle this far from the card's aspect (ratio) still counts:
# a photo tilted ~20 degrees, or rounded corners, change the seen aspect by up to ~15 %; two
# cards side by side (aspect ~1.3) must stay out
ASPECT_TOLERANCE = 1.2
MIN_FILL = 0.9  # the outline's convex hull fills its rectangle this much (a card, not an L)
MIN_LONG_SHARE = 0.06  # a card's long side at least this share of the frame's short side
MIN_SCORE = 0.1  # table-likeness outside minus inside: below this, not a card on the table
BORDER_SHARE = 0.06  # the frame's border strip that shows the table, as a share of its side
GROW_REACH = 0.2  # a side moves out at most this share of the card's width to the table


@dataclass(frozen=True)
class FoundCards:
    """Quads (N,4,2: TL, TR, BR, BL with the long side down the frame, top nearer the frame's
    top; frame pixels) of the cards found, best first, and how sure each is (``score``)."""

    quads: np.ndarray
    scores: np.ndarray

    def __len__(self) -> int:
        return len(self.quads)


def order_quad(points) -> np.ndarray:
    """Four corners in any order -> TL, TR, BR, BL of a card standing upright in the frame:
    its long sides run down, its top is the short side nearer the frame's top."""
    pts = np.asarray(points, np.float64).reshape(4, 2)
    centre = pts.mean(0)
    pts = pts[np.argsort(np.arctan2(pts[:, 1] - centre[1], pts[:, 0] - centre[0]))]
    first = np.linalg.norm(pts[1] - pts[0]) + np.linalg.norm(pts[3] - pts[2])
    second = np.linalg.norm(pts[2] - pts[1]) + np.linalg.norm(pts[0] - pts[3])
    if first > second:  # make 0-1 a short side
        pts = np.roll(pts, -1, axis=0)
    if pts[0, 1] + pts[1, 1] > pts[2, 1] + pts[3, 1]:
        pts = np.roll(pts, 2, axis=0)
    return pts.astype(np.float32)


def _outlines(img: np.ndarray, method: str) -> np.ndarray:
    """A binary map whose closed outlines may be cards."""
    if method in ("canny", "median"):
        smooth = cv2.GaussianBlur(img, (0, 0), 1.0) if method == "canny" else cv2.medianBlur(img, 5)
        low, high = (40, 120) if method == "canny" else (60, 160)
        edges = np.zeros(img.shape[:2], np.uint8)
        for channel in cv2.split(smooth):
            edges |= cv2.Canny(channel, low, high)
        return cv2.morphologyEx(edges, cv2.MORPH_CLOSE, np.ones((3, 3), np.uint8))
    grey = cv2.cvtColor(cv2.medianBlur(img, 5), cv2.COLOR_BGR2GRAY)
    return cv2.adaptiveThreshold(
        grey, 255, cv2.ADAPTIVE_THRESH_MEAN_C, cv2.THRESH_BINARY_INV, 31, 8
    )


def _card_quads(
    binary: np.ndarray, mode: int, min_long: float, min_fill: float = MIN_FILL
) -> list[np.ndarray]:
    """The closed outlines of a binary map shaped like a card, as ordered quads."""
    contours, _ = cv2.findContours(binary, mode, cv2.CHAIN_APPROX_SIMPLE)
    longest = 0.95 * max(binary.shape)
    out = []
    for contour in contours:
        if len(contour) < 4:
            continue
        (_, _), (rw, rh), _ = cv2.minAreaRect(contour)
        long, short = max(rw, rh), min(rw, rh)
        if long < min_long or long > longest or short < 4:
            continue
        if not CARD_ASPECT / ASPECT_TOLERANCE <= long / short <= CARD_ASPECT * ASPECT_TOLERANCE:
            continue
        hull = cv2.convexHull(contour)
        if cv2.contourArea(hull) < min_fill * rw * rh:
            continue
        approx = cv2.approxPolyDP(hull, 0.03 * cv2.arcLength(hull, True), True)
        quad = approx.reshape(4, 2) if len(approx) == 4 else cv2.boxPoints(cv2.minAreaRect(hull))
        out.append(order_quad(quad))
    return out


def table_colours(img: np.ndarray, bins: int = 16) -> np.ndarray:
    """Per pixel, 0..1: how common its colour is in the frame's border strip (the table),
    against the commonest colour there. A Lab histogram of the strip, each bin spread to its
    neighbours (a table's colours vary a little more than the strip samples), back-projected."""
    hh, ww = img.shape[:2]
    strip = max(4, int(BORDER_SHARE * min(hh, ww)))
    lab = cv2.cvtColor(cv2.GaussianBlur(img, (0, 0), 1.5), cv2.COLOR_BGR2Lab)
    q = (lab // (256 // bins)).astype(np.int32)
    index = (q[..., 0] * bins + q[..., 1]) * bins + q[..., 2]
    ring = np.ones((hh, ww), bool)
    ring[strip:-strip, strip:-strip] = False
    hist = np.bincount(index[ring], minlength=bins**3).astype(np.float32)
    hist = hist.reshape(bins, bins, bins)
    padded = np.pad(hist, 1)
    hist = sum(
        padded[i : i + bins, j : j + bins, k : k + bins]
        for i in range(3)
        for j in range(3)
        for k in range(3)
    )
    hist /= max(float(hist.max()), 1e-6)
    return hist.reshape(-1)[index].astype(np.float32)


def _scaled(quad: np.ndarray, factor: float) -> np.ndarray:
    centre = quad.mean(0)
    return (centre + (quad - centre) * factor).astype(np.float32)


def _ring_mean(prob: np.ndarray, quad: np.ndarray, outer: float, inner: float) -> float:
    """The mean of ``prob`` between the quad scaled by ``outer`` and by ``inner``."""
    hh, ww = prob.shape
    big = _scaled(quad, outer)
    x0, y0 = np.maximum(np.floor(big.min(0)).astype(int), 0)
    x1, y1 = np.minimum(np.ceil(big.max(0)).astype(int) + 1, [ww, hh])
    if x1 <= x0 or y1 <= y0:
        return 0.0
    mask = np.zeros((y1 - y0, x1 - x0), np.uint8)
    offset = np.float32([x0, y0])
    cv2.fillConvexPoly(mask, np.round(big - offset).astype(np.int32), 1)
    cv2.fillConvexPoly(mask, np.round(_scaled(quad, inner) - offset).astype(np.int32), 0)
    chosen = mask.astype(bool)
    return float(prob[y0:y1, x0:x1][chosen].mean()) if chosen.any() else 0.0


def _between_mean(prob: np.ndarray, outer: np.ndarray, inner: np.ndarray) -> float:
    """The mean of ``prob`` inside quad ``outer`` but outside quad ``inner``."""
    hh, ww = prob.shape
    x0, y0 = np.maximum(np.floor(outer.min(0)).astype(int), 0)
    x1, y1 = np.minimum(np.ceil(outer.max(0)).astype(int) + 1, [ww, hh])
    if x1 <= x0 or y1 <= y0:
        return 1.0
    mask = np.zeros((y1 - y0, x1 - x0), np.uint8)
    offset = np.float32([x0, y0])
    cv2.fillConvexPoly(mask, np.round(outer - offset).astype(np.int32), 1)
    cv2.fillConvexPoly(mask, np.round(inner - offset).astype(np.int32), 0)
    chosen = mask.astype(bool)
    return float(prob[y0:y1, x0:x1][chosen].mean()) if chosen.any() else 1.0


def _grow_to_table(quad: np.ndarray, prob: np.ndarray, table: float = 0.6) -> np.ndarray:
    """Each side moved out to just before the table begins (``prob`` >= ``table`` along it),
    at most ``GROW_REACH`` of the card's width: a card whose outer margin looks unlike the
    table was outlined by its printed frame. A side with no table within reach stays."""
    q = np.asarray(quad, np.float64)
    centre = q.mean(0)
    width = min(np.linalg.norm(q[1] - q[0]), np.linalg.norm(q[2] - q[1]))
    hh, ww = prob.shape
    moves = []
    for i in range(4):
        a, b = q[i], q[(i + 1) % 4]
        along = b - a
        normal = np.array([along[1], -along[0]]) / (np.linalg.norm(along) + 1e-9)
        if np.dot((a + b) / 2 - centre, normal) < 0:
            normal = -normal
        points = a + along * np.linspace(0.15, 0.85, 32)[:, None]
        step = 0
        for d in range(1, max(2, int(GROW_REACH * width)) + 1):
            p = points + normal * d
            if (p < 0).any() or (p[:, 0] >= ww - 1).any() or (p[:, 1] >= hh - 1).any():
                break
            if prob[np.round(p[:, 1]).astype(int), np.round(p[:, 0]).astype(int)].mean() >= table:
                step = d - 1
                break
        moves.append(normal * step)
    out = q.copy()
    for i in range(4):
        out[i] += moves[i] + moves[(i - 1) % 4]
    return out.astype(np.float32)


def _inside(quad: np.ndarray, point) -> bool:
    return cv2.pointPolygonTest(quad, (float(point[0]), float(point[1])), False) >= 0


def find_cards(bgr: np.ndarray, min_score: float = MIN_SCORE) -> FoundCards:
    """The cards lying on the table in a BGR frame, found by shape alone (see the module)."""
    h, w = bgr.shape[:2]
    scale = min(1.0, WORK_SIDE / max(h, w))
    img = cv2.resize(bgr, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
    small = cv2.resize(img, None, fx=0.5, fy=0.5, interpolation=cv2.INTER_AREA)
    min_long = MIN_LONG_SHARE * min(img.shape[:2])
    common = table_colours(img)
    # table-likeness: a colour with 5 % of the commonest colour's share is fully the table's
    prob = cv2.blur(np.minimum(1.0, common / 0.05), (5, 5))
    unlike_table = (cv2.blur(common, (7, 7)) < 0.2).astype(np.uint8) * 255
    unlike_table = cv2.morphologyEx(unlike_table, cv2.MORPH_OPEN, np.ones((5, 5), np.uint8))
    unlike_table = cv2.morphologyEx(unlike_table, cv2.MORPH_CLOSE, np.ones((7, 7), np.uint8))
    candidates = _card_quads(unlike_table, cv2.RETR_EXTERNAL, min_long, MIN_FILL - 0.03)
    for method in ("canny", "median", "adaptive"):
        candidates += _card_quads(_outlines(img, method), cv2.RETR_LIST, min_long)
    for method in ("canny", "median"):
        candidates += [
            2 * q for q in _card_quads(_outlines(small, method), cv2.RETR_LIST, min_long / 2)
        ]
    scored = sorted(((_score(prob, q), q) for q in candidates), key=lambda t: -t[0])
    kept: list[tuple[float, np.ndarray, float]] = []
    for score, quad in scored:
        if score < min_score:
            break
        area = cv2.contourArea(quad)
        clash = [
            i
            for i, (_, other, _) in enumerate(kept)
            if _inside(other, quad.mean(0)) or _inside(quad, other.mean(0))
        ]
        if not clash:
            kept.append((score, quad, area))
        elif len(clash) == 1:
            _, other, other_area = kept[clash[0]]
            # the printed frame was found first: the card is the rectangle around it, where
            # what lies between them is not the table
            if (
                area > other_area
                and all(_inside(quad, p) for p in other)
                and _between_mean(prob, quad, other) < 0.5
            ):
                kept[clash[0]] = (score, quad, area)
    kept = _split_pairs(kept, scored)
    kept = _join_parts(kept, prob, min_score)
    if not kept:
        return FoundCards(np.zeros((0, 4, 2), np.float32), np.zeros(0, np.float32))
    quads = np.stack([_grow_to_table(q, prob) for _, q, _ in kept]) / scale
    return FoundCards(quads.astype(np.float32), np.float32([s for s, _, _ in kept]))


def table_likeness(img: np.ndarray) -> np.ndarray:
    """Per pixel, 0..1: how much its colour is the table's (a colour with 5 % of the border
    strip's commonest colour's share is fully the table's), smoothed a little."""
    return cv2.blur(np.minimum(1.0, table_colours(img) / 0.05), (5, 5))


def card_score(prob: np.ndarray, quad: np.ndarray) -> float:
    """How much more table-like (``table_likeness``) the ring just outside a quad is than the
    band inside it: near 1 for a card on the table, near 0 for a patch of the table."""
    return _score(prob, quad)


def _score(prob: np.ndarray, quad: np.ndarray) -> float:
    """How much more table-like the ring just outside a quad is than the band inside it."""
    return _ring_mean(prob, quad, 1.08, 1.02) - _ring_mean(prob, quad, 0.96, 0.6)


def _split_pairs(kept: list, scored: list) -> list:
    """A found rectangle that holds two or more card-shaped candidates of 30-60 % of its area
    side by side, filling most of it, was two cards lying close (one outline around both)."""
    out = []
    for score, quad, area in kept:
        grown = _scaled(quad, 1.03)
        parts: list[tuple[float, np.ndarray, float]] = []
        for inner_score, inner in scored:
            inner_area = cv2.contourArea(inner)
            if not 0.3 * area <= inner_area <= 0.6 * area:
                continue
            if not all(_inside(grown, p) for p in inner):
                continue
            if any(_inside(p, inner.mean(0)) or _inside(inner, p.mean(0)) for _, p, _ in parts):
                continue
            parts.append((inner_score, inner, inner_area))
        if len(parts) >= 2 and sum(p[2] for p in parts) >= 0.7 * area:
            out += parts
        else:
            out.append((score, quad, area))
    return out


def _join_parts(kept: list, prob: np.ndarray, min_score: float) -> list:
    """Two found rectangles that together make one card-shaped rectangle (a card whose art
    splits it by a strong line across, each part outlined apart) become that card, where it
    scores at least as well as the weaker part."""
    changed = True
    while changed and len(kept) > 1:
        changed = False
        for i in range(len(kept)):
            for j in range(i + 1, len(kept)):
                points = np.concatenate([kept[i][1], kept[j][1]])
                hull = cv2.convexHull(points.astype(np.float32))
                (_, _), (rw, rh), _ = cv2.minAreaRect(hull)
                long, short = max(rw, rh), min(rw, rh)
                if short < 4 or not (
                    CARD_ASPECT / ASPECT_TOLERANCE <= long / short <= CARD_ASPECT * ASPECT_TOLERANCE
                ):
                    continue
                if cv2.contourArea(hull) < MIN_FILL * rw * rh:
                    continue
                # the parts fill the union (two cards side by side leave their gap), and it is
                # no larger than the other cards (one deck: one size)
                if kept[i][2] + kept[j][2] < 0.9 * rw * rh:
                    continue
                others = [k[2] for n, k in enumerate(kept) if n not in (i, j)]
                if len(others) >= 2 and rw * rh > 1.4 * float(np.median(others)):
                    continue
                quad = order_quad(cv2.boxPoints(cv2.minAreaRect(hull)))
                score = _score(prob, quad)
                if score >= max(min_score, min(kept[i][0], kept[j][0])):
                    union = (score, quad, cv2.contourArea(quad))
                    kept = [k for n, k in enumerate(kept) if n not in (i, j)] + [union]
                    changed = True
                    break
            if changed:
                break
    return sorted(kept, key=lambda t: -t[0])


SIDE_POINTS = 24  # points looked at along each side of a quad (10-90 % of its length)
SIDE_REACH = 3  # ... each this far (px) either way across the side: a quad is a little off
# ... where the colour steps across the side by this much (Lab units) there is an edge: the
# grain of a table or a card's flat ground step by a few units, a card's cut edge by 15-100
SIDE_STEP = 10.0


def side_support(bgr: np.ndarray, quads: np.ndarray) -> np.ndarray:
    """How much of each side of each quad (N,4,2) runs along an edge of the frame's picture:
    (N,4), the share of ``SIDE_POINTS`` points along the side where the colour steps across
    it by ``SIDE_STEP``. A card lying on the table shows its cut edge on every side not
    covered (a fanned row's card at least on three); a hand, a shadow or a patch of the table
    outlined by a loose quad shows none along most of its sides."""
    quads = np.asarray(quads, np.float32).reshape(-1, 4, 2)
    out = np.zeros((len(quads), 4), np.float32)
    h, w = bgr.shape[:2]
    along = np.linspace(0.1, 0.9, SIDE_POINTS)[:, None]
    offsets = np.arange(-SIDE_REACH, SIDE_REACH + 1)[:, None, None]
    # each quad's own neighbourhood only (the frame's colour steps cost more than the quads),
    # one picture of them for quads that crowd around one card: the same steps either way,
    # as every point looked at lies inside its own quad's neighbourhood
    lows = np.maximum(np.floor(quads.min(axis=1)).astype(int) - SIDE_REACH - 2, 0)
    highs = np.minimum(np.ceil(quads.max(axis=1)).astype(int) + SIDE_REACH + 3, [w, h])
    usable = np.flatnonzero((highs > lows + 2).all(axis=1))
    for group in _shared_neighbourhoods(lows[usable], highs[usable]):
        members = usable[group]
        lo, hi = lows[members].min(axis=0), highs[members].max(axis=0)
        lab = cv2.cvtColor(bgr[lo[1] : hi[1], lo[0] : hi[0]], cv2.COLOR_BGR2Lab)
        lab = lab.astype(np.float32)
        # Sobel's 3x3 kernel weighs a step of one unit as 8 (4 along x, 2 for the two pixels)
        gx = np.stack([cv2.Sobel(lab[..., k], cv2.CV_32F, 1, 0, ksize=3) for k in range(3)]) / 8
        gy = np.stack([cv2.Sobel(lab[..., k], cv2.CV_32F, 0, 1, ksize=3) for k in range(3)]) / 8
        for i in members:
            # a point is looked at only inside the quad's own neighbourhood
            own_lo, own_hi = lows[i] - lo, highs[i] - lo
            local = quads[i] - lo.astype(np.float32)
            for side in range(4):
                a, b = local[side], local[(side + 1) % 4]
                d = b - a
                normal = np.array([-d[1], d[0]]) / (np.linalg.norm(d) + 1e-6)
                points = a + along * d  # (P, 2)
                seen = points[None] + offsets * normal  # (reach, P, 2)
                x = np.round(seen[..., 0]).astype(int)
                y = np.round(seen[..., 1]).astype(int)
                inside = (x >= own_lo[0]) & (x < own_hi[0]) & (y >= own_lo[1]) & (y < own_hi[1])
                x = np.clip(x, own_lo[0], own_hi[0] - 1)
                y = np.clip(y, own_lo[1], own_hi[1] - 1)
                across = gx[:, y, x] * normal[0] + gy[:, y, x] * normal[1]  # (3, reach, P)
                step = np.sqrt((across**2).sum(axis=0)) * inside
                out[i, side] = float((step.max(axis=0) >= SIDE_STEP).mean())
    return out


def _shared_neighbourhoods(lows: np.ndarray, highs: np.ndarray) -> list[np.ndarray]:
    """Boxes (lows, highs: (N, 2)) grouped where one box around a group costs no more pixels
    than the group's boxes apart: each group's indices."""
    groups: list[list[int]] = []
    bounds: list[tuple[np.ndarray, np.ndarray, int]] = []  # low, high, pixels apart
    area = np.prod(highs - lows, axis=1)
    for i in np.argsort(lows[:, 0], kind="stable"):
        for g, (lo, hi, apart) in enumerate(bounds):
            new_lo, new_hi = np.minimum(lo, lows[i]), np.maximum(hi, highs[i])
            if np.prod(new_hi - new_lo) <= apart + area[i]:
                groups[g].append(int(i))
                bounds[g] = (new_lo, new_hi, apart + int(area[i]))
                break
        else:
            groups.append([int(i)])
            bounds.append((lows[i], highs[i], int(area[i])))
    return [np.array(g, int) for g in groups]


def rectify(bgr: np.ndarray, quad: np.ndarray, height: int = 256) -> np.ndarray:
    """The card inside ``quad`` (TL, TR, BR, BL) seen straight on, ``height`` px tall."""
    width = round(height / CARD_ASPECT)
    target = np.float32([[0, 0], [width, 0], [width, height], [0, height]])
    matrix = cv2.getPerspectiveTransform(np.asarray(quad, np.float32), target)
    return cv2.warpPerspective(
        bgr, matrix, (width, height), flags=cv2.INTER_AREA, borderMode=cv2.BORDER_REPLICATE
    )
