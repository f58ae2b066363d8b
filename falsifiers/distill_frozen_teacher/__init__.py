"""The checkers of ``contracts/distill-frozen-teacher-v1.yaml``: distillation teaches a student from a
frozen teacher."""
