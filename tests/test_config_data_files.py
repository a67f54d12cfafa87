"""A JSON / YAML file past MAX_CONFIG_BYTES is data (VideoX's 4 MB annotation files), not a configuration:
``Project.named_in_configs`` does not search it (searching it once per module name made a 25-file tree
take minutes, set 15), while a small configuration file naming the word still counts."""
import json

from amplint.config_evidence import MAX_CONFIG_BYTES
from amplint.project import Project

from cliutil import write_project


def test_a_data_file_is_no_configuration_and_a_small_config_still_is(tmp_path):
    data = json.dumps([{"video": f"v{i}", "sentence": "a person opens the door"} for i in range(MAX_CONFIG_BYTES // 40)]
                      + [{"target": "Annotator"}])
    root = write_project(tmp_path / "p", {"train.py": "import torch\n", "data/train.json": data,
                                          "configs/model.yaml": "model:\n  target: models.TAN\n"})
    assert len(data) > MAX_CONFIG_BYTES
    p = Project(root)
    assert not p.named_in_configs("Annotator")  # only in the data file
    assert p.named_in_configs("TAN")
    assert p.named_in_configs("TAN")  # asked again: the same answer
