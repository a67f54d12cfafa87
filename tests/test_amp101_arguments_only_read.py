"""AMP101 on ``HfArgumentParser((..., TrainingArguments))`` only where the training arguments can reach a
trainer: a program that parses them to read fields (``training_args.fp16`` to pick a load dtype,
``.output_dir``) and runs inference under no_grad never builds the Trainer's AdamW, so its
``adam_epsilon`` is never used (tevatron's encode / rerank drivers, unseen set 19, T19-2), while the
training program beside it keeps its finding. Near misses: a Trainer built, the arguments handed on
whole to a function, the parsed tuple kept whole."""
import textwrap

from cliutil import hazard_findings, write_project

PROGRAM = '''
from dataclasses import dataclass, field

import torch
from transformers import AutoModel, HfArgumentParser, TrainingArguments


@dataclass
class ModelArguments:
    model_name_or_path: str = field(default="bert-base-uncased")


def main():
    parser = HfArgumentParser((ModelArguments, TrainingArguments))
    {parsed} = parser.parse_args_into_dataclasses()
    training_args: TrainingArguments
    model = AutoModel.from_pretrained(model_args.model_name_or_path, torch_dtype=torch.float16).cuda()
{body}


if __name__ == "__main__":
    main()
'''
ENCODE = '''    batch = torch.randint(0, 1000, (training_args.per_device_eval_batch_size, 32)).cuda()
    with torch.no_grad():
        reps = model(input_ids=batch).last_hidden_state[:, 0]
    torch.save(reps.cpu(), training_args.output_dir + "/reps.pt")'''
TRAIN = '''    from transformers import Trainer
    Trainer(model=model, args=training_args).train()'''
HANDED_ON = '''    from loops import fit
    fit(model, training_args)'''


def findings(tmp_path, body=ENCODE, parsed="model_args, training_args"):
    program = PROGRAM.replace("{parsed}", parsed).replace("{body}", body)
    if parsed == "parsed":
        program = program.replace("model_args.model_name_or_path", "parsed[0].model_name_or_path")
    files = {"encode.py": textwrap.dedent(program), "train.py": textwrap.dedent(PROGRAM.replace("{parsed}", "model_args, training_args")
                                                                                  .replace("{body}", TRAIN)),
             "loops.py": "from transformers import Trainer\n\n\ndef fit(model, args):\n    Trainer(model=model, args=args).train()\n"}
    return sorted(hazard_findings(write_project(tmp_path / "p", files)))


def test_arguments_parsed_only_to_read_their_fields_in_an_inference_program(tmp_path):
    assert findings(tmp_path) == [("train.py", "AMP101")]


def test_near_miss_the_arguments_handed_to_a_trainer(tmp_path):
    assert findings(tmp_path, body=TRAIN) == [("encode.py", "AMP101"), ("train.py", "AMP101")]


def test_near_miss_the_arguments_handed_on_whole(tmp_path):
    assert findings(tmp_path, body=HANDED_ON) == [("encode.py", "AMP101"), ("train.py", "AMP101")]


def test_near_miss_the_parsed_tuple_kept_whole(tmp_path):
    assert findings(tmp_path, body=ENCODE.replace("training_args.", "parsed[1]."), parsed="parsed") \
        == [("encode.py", "AMP101"), ("train.py", "AMP101")]
