"""Frame -> Detections: a tiny two-stage card recognizer on onnxruntime + OpenCV + numpy.

``Recognizer.load(path).detect(bgr) -> Detections``. A localizer finds card centres, sizes and
angles on a downscaled frame; a classifier names each rectified crop and finds its corners
(``decoding`` tells the whole path). No torch here: the lab (``lab/``) trains the nets and
shares only the geometry.

Modules, by concern:

- ``settings``: how a model decodes (``Settings``, stored in its recognizer.json);
- ``nets``: the model's files, which set of nets suits this CPU, the onnxruntime sessions;
- ``geometry``: letterboxing, rotated boxes, crops (shared with training);
- ``decoding``: heatmap -> boxes -> crops -> Detections, the learned acceptance rule;
- ``detector``: ``Recognizer``, reading images;
- ``drawing``: ``annotate``.

How well and how fast it does (``companion eval``, ``companion bench``) is measured in
``companion.bench``.
"""

from companion.recognizer.decoding import (
    ACCEPT_PLANE_CONFIDENCE,
    CARD_ASPECT,
    DecodeTrace,
    accept_probability,
    acceptance_features,
    cool_peaks,
    decode_heatmap,
    localize,
    names_a_card,
)
from companion.recognizer.detector import MAX_SIDE, Recognizer, as_bgr, read_image
from companion.recognizer.drawing import LabelBox, annotate, label_boxes
from companion.recognizer.geometry import (
    crop_card,
    crop_cards,
    crop_matrices,
    crop_matrix,
    crop_points_to_image,
    crop_targets,
    letterbox,
    neighbour_boxes,
    quad_to_rbox,
    quads_to_rboxes,
    rbox_quad,
    row_boxes,
    spaced,
)
from companion.recognizer.nets import (
    DEFAULT_MODEL,
    MODELS_DIR,
    NETS,
    auto_nets,
    cpu_name,
    int8_is_fast,
    metadata_path,
    net_input,
    open_session,
    to_chw_float,
)
from companion.recognizer.settings import (
    ACCEPT_FEATURES,
    NONE_ID,
    Acceptance,
    AcceptTrees,
    Candidates,
    FinalSteps,
    Inputs,
    RecognizerError,
    SecondChances,
    Settings,
)

__all__ = [
    "ACCEPT_FEATURES",
    "ACCEPT_PLANE_CONFIDENCE",
    "CARD_ASPECT",
    "DEFAULT_MODEL",
    "MAX_SIDE",
    "MODELS_DIR",
    "NETS",
    "NONE_ID",
    "AcceptTrees",
    "Acceptance",
    "Candidates",
    "DecodeTrace",
    "FinalSteps",
    "Inputs",
    "LabelBox",
    "Recognizer",
    "RecognizerError",
    "SecondChances",
    "Settings",
    "accept_probability",
    "acceptance_features",
    "annotate",
    "as_bgr",
    "auto_nets",
    "cool_peaks",
    "cpu_name",
    "crop_card",
    "crop_cards",
    "crop_matrices",
    "crop_matrix",
    "crop_points_to_image",
    "crop_targets",
    "decode_heatmap",
    "int8_is_fast",
    "label_boxes",
    "letterbox",
    "localize",
    "metadata_path",
    "names_a_card",
    "neighbour_boxes",
    "net_input",
    "open_session",
    "quad_to_rbox",
    "quads_to_rboxes",
    "rbox_quad",
    "read_image",
    "row_boxes",
    "spaced",
    "to_chw_float",
]
