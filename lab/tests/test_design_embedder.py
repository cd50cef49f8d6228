"""The design embedder's training: made-up decks are drawn the same for a seed and differ
between seeds and between the cards of a month; the crops it learns from are the product's crop
size with their cards' indices; a short run lowers the loss of a fixed episode; the exported
file gives the torch net's unit-length features to uint8 crops, as the product feeds them."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")

from companion_lab import design_embedder as de  # noqa: E402

from companion.recognizer.decks import model_settings  # noqa: E402
from companion.recognizer.nets import open_session  # noqa: E402
from companion.recognizer.settings import Settings  # noqa: E402


@pytest.fixture(scope="module")
def settings():
    return Settings.from_dict(model_settings())


def test_a_motley_deck_is_drawn_the_same_for_its_seed_and_its_cards_differ():
    first, again, other = de.motley_deck(3), de.motley_deck(3), de.motley_deck(4)
    assert len(first) == 48 and first[0].shape == (de.FACE_H, de.FACE_W, 3)
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    assert not np.array_equal(first[0], other[0])
    # the four cards of January are four different pictures
    jan = [first[k].astype(np.int16) for k in range(4)]
    assert min(np.abs(a - b).mean() for i, a in enumerate(jan) for b in jan[i + 1 :]) > 1.0


def test_a_repainted_deck_changes_the_pictures_but_keeps_their_size():
    faces = de.motley_deck(5)
    painted = de.repainted_deck(faces, seed=2)
    assert [p.shape for p in painted] == [f.shape for f in faces]
    assert np.abs(painted[0].astype(np.int16) - faces[0]).mean() > 5


def test_views_are_crops_of_the_product_size_with_their_cards(settings):
    faces = de.motley_deck(6)[:6]
    rng = np.random.default_rng(0)
    refs = de.reference_views(faces[2], rng, settings, 3)
    assert refs.shape == (6, settings.inputs.crop_height, settings.inputs.crop_width, 3)
    crops, ids = de.table_views(faces, rng, settings, per_card=2)
    assert crops.shape[0] == 12 and ids.tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    assert crops.dtype == np.uint8 and crops.std() > 10  # pictures, not blanks


def _episode(settings, seed: int, deck: int, cards: int):
    """A fresh net and one episode of a motley deck's first ``cards`` cards: (net, rng, faces,
    the table crops, their torch inputs (refs, ref ids, queries, query ids))."""
    from companion_lab.training import _as_input

    torch.manual_seed(0)
    net = de.build_embedder_net()
    rng = np.random.default_rng(seed)
    faces = de.motley_deck(deck)[:cards]
    refs = np.concatenate([de.reference_views(f, rng, settings, 2) for f in faces])
    ref_ids = torch.from_numpy(np.repeat(np.arange(cards), 4))
    queries, query_ids = de.table_views(faces, rng, settings, per_card=2)
    inputs = (_as_input(refs), ref_ids, _as_input(queries), torch.from_numpy(query_ids))
    return net, rng, faces, queries, inputs


def test_training_lowers_the_loss_of_an_episode_and_the_export_matches_torch(settings, tmp_path):
    net, _, _, queries, (r, ref_ids, q, qi) = _episode(settings, seed=1, deck=8, cards=8)
    optimiser = torch.optim.Adam(net.parameters(), lr=1e-3)
    net.train()
    first, _, _ = de._episode_loss(net, r, ref_ids, q, qi, 16.0)
    for _ in range(10):
        loss, _, _ = de._episode_loss(net, r, ref_ids, q, qi, 16.0)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    with torch.no_grad():  # still the batch's own statistics, as ``first``
        after, _, _ = de._episode_loss(net, r, ref_ids, q, qi, 16.0)
    net.eval()
    with torch.no_grad():
        expected = net(q[:5]).numpy()
    assert float(after) < float(first.detach()) * 0.8
    out = de.export_design_embedder(net, tmp_path / "design_embedder.onnx", settings)
    got = open_session(out, 1).run(None, {"crop": np.ascontiguousarray(queries[:5])})[0]
    np.testing.assert_allclose(got, expected, atol=1e-4)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


def test_crops_of_no_single_card_are_product_crops_of_each_kind(settings):
    faces = de.motley_deck(6)[:6]
    crops = de.not_one_card_views(faces, np.random.default_rng(2), settings, 8)
    assert crops.shape == (8, settings.inputs.crop_height, settings.inputs.crop_width, 3)
    assert crops.dtype == np.uint8
    # each kind in turn: the table's crops are plainer than those showing two cards
    table, two = crops[0::4], crops[1::4]
    assert float(table.std(axis=(1, 2, 3)).mean()) < float(two.std(axis=(1, 2, 3)).mean())


def test_the_no_card_class_learns_to_refuse_crops_of_no_card(settings):
    from companion_lab.training import _as_input

    net, rng, faces, _, (r, ref_ids, q, qi) = _episode(settings, seed=3, deck=9, cards=6)
    negatives = _as_input(de.not_one_card_views(faces, rng, settings, 8))
    bar = torch.nn.Parameter(torch.tensor(0.6))
    optimiser = torch.optim.Adam([*net.parameters(), bar], lr=1e-3)
    net.train()
    first, _, _ = de._episode_loss(net, r, ref_ids, q, qi, 16.0, negatives, bar)
    for _ in range(12):
        loss, _, refused = de._episode_loss(net, r, ref_ids, q, qi, 16.0, negatives, bar)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    with torch.no_grad():
        after, _, refused = de._episode_loss(net, r, ref_ids, q, qi, 16.0, negatives, bar)
    assert float(after) < float(first.detach()) * 0.8
    assert 0.0 <= float(refused) <= 1.0


def test_a_resumed_run_keeps_its_bar(settings, tmp_path):
    net = de.build_embedder_net()
    de._save(net, tmp_path, settings, 0.42)
    config = de.EmbedderConfig(minutes=0.01, seed=1, decks_in_pool=1, references_per_card=1,
                               table_per_card=1)  # fmt: skip
    record = de.train_design_embedder(tmp_path / "next", config,
                                      checkpoint=tmp_path / "design_embedder.pt", log=lambda _: None)  # fmt: skip
    assert abs(record["bar"] - 0.42) < 0.05
