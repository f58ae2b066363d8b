"""The checkers of ``contracts/build-cache-v1.yaml``: the artefacts the contract fixtures stand on (the
pretrained init every training contract starts from) are built once per machine and handed to every
process, and built again whenever anything that made them changes."""
