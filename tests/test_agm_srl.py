"""AGM Table 2 (SRL): jobs and settings of the paper config, the two losses of the table, the
relabelling by class rank, and errors."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from structpred.data.srl import SRL_CLASSES, class_order, ordinal_loss
from structpred.errors import ConfigError
from structpred.experiments import agm_srl
from structpred.experiments.registry import get
from structpred.outputs import Tree, TreeArray

CONFIG = yaml.safe_load(open("config/config.yaml"))


def test_jobs_and_settings_of_the_paper_config():
    exp = get("agm_srl")
    assert exp.jobs(CONFIG) == [("conll2005", m, 0) for m in ("AGM", "CRF", "SSVM", "M4N")]
    s = exp.settings(CONFIG, "conll2005", "AGM")
    assert s["game"] == "exact" and s["subsample"] == {"train": 2000} and exp.view(CONFIG, "conll2005") == "conll2005"


def test_the_ordinal_loss_is_the_absolute_loss_on_ranks():
    rank, names = class_order(0)
    C, order = ordinal_loss(0)
    assert order == names and sorted(names) == sorted(SRL_CLASSES)
    i, j = np.meshgrid(np.arange(9), np.arange(9), indexing="ij")
    np.testing.assert_array_equal(C, np.abs(rank[i] - rank[j]))
    assert [names[r] for r in rank] == list(SRL_CLASSES)  # rank[k] is class k's place in the order


def test_tree_losses_per_tree_and_pooled():
    space = Tree(9, "absolute")
    y = [TreeArray(np.array([0, 1, 2]), np.array([-1, 0, 0])), TreeArray(np.array([4]), np.array([-1]))]
    pred = [TreeArray(np.array([0, 3, 2]), np.array([-1, 0, 0])), TreeArray(np.array([1]), np.array([-1]))]
    per_tree, node = agm_srl.tree_losses(space, y, pred)
    np.testing.assert_allclose(per_tree, [2 / 3, 3.0])
    assert node == pytest.approx((2 + 3) / 4)


def test_unknown_method_is_a_clear_error():
    with pytest.raises(ConfigError, match="unknown agm_srl method 'HMM'"):
        agm_srl.estimator("HMM", Tree(9, "absolute"), 0.1, get("agm_srl").settings(CONFIG, "conll2005", "AGM"), 0)
