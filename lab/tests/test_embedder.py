"""The embedder ``companion deck add`` uses is the float classifier cut at its last hidden
layer: re-deriving it gives the committed file's outputs, and the classifier's card head on
those features gives the classifier's own probabilities."""

import numpy as np
import pytest

from companion.recognizer import MODELS_DIR, open_session
from companion.recognizer.decks import EMBEDDER

onnx = pytest.importorskip("onnx")


def test_export_embedder_matches_the_committed_file_and_the_classifier(tmp_path):
    from companion_lab.embedder import export_embedder
    from onnx import numpy_helper

    classifier = MODELS_DIR / "classifier.float.onnx"
    out = export_embedder(classifier, tmp_path / "embedder.onnx")
    crops = np.random.default_rng(0).integers(0, 255, (5, 80, 48, 3), dtype=np.uint8)
    fresh = open_session(out, 1).run(None, {"crop": crops})[0]
    committed = open_session(EMBEDDER, 1).run(None, {"crop": crops})[0]
    np.testing.assert_allclose(fresh, committed, rtol=1e-5, atol=1e-5)
    weights = {
        w.name: numpy_helper.to_array(w) for w in onnx.load(str(classifier)).graph.initializer
    }
    logits = fresh @ weights["net.cls.weight"].T + weights["net.cls.bias"]
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    expected = open_session(classifier, 1).run(None, {"crop": crops})[0]
    np.testing.assert_allclose(probs, expected, atol=1e-4)
    with pytest.raises(ValueError, match="no tensor"):
        export_embedder(classifier, tmp_path / "x.onnx", hidden="nothing")
