"""The embedder the product's ``companion deck add`` matches crops with: the float classifier
cut at its last hidden layer (the 192 features its three heads read), derived once with the
``onnx`` package and committed as ``companion/models/embedder.onnx``. No training: the same
weights, one more graph output, the heads left out."""

from __future__ import annotations

from pathlib import Path

HIDDEN = "/net/fc/fc.2/Relu_output_0"  # the classifier's last hidden layer (after its ReLU)


def export_embedder(classifier: str | Path, out: str | Path, hidden: str = HIDDEN) -> Path:
    """Write ``out``: ``classifier`` (a float classifier ONNX file) with one output,
    ``embedding`` (N, features), its ``hidden`` tensor; the nodes only the heads need are
    dropped."""
    import onnx
    from onnx import helper, utils

    model = onnx.load(str(classifier))
    names = {o for n in model.graph.node for o in n.output}
    if hidden not in names:
        raise ValueError(f"{classifier} has no tensor {hidden!r}.")
    graph = model.graph
    graph.node.append(helper.make_node("Identity", [hidden], ["embedding"]))
    del graph.output[:]
    graph.output.append(
        helper.make_tensor_value_info("embedding", onnx.TensorProto.FLOAT, ["n", "features"])
    )
    extractor = utils.Extractor(model)
    cut = extractor.extract_model([i.name for i in graph.input], ["embedding"])
    cut.producer_name = "companion-lab export_embedder"
    onnx.checker.check_model(cut)
    out = Path(out)
    onnx.save(cut, str(out))
    return out
