"""The checkers of ``contracts/pretrain-init-finetune-v1.yaml``: pretraining from an init checkpoint
(`python -m engine pretrain --init CKPT`) really starts from the init's weights."""
