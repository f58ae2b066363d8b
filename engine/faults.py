"""The engine's planted defects.  Each mutant in a contract names one of these.

Every fault is off by default; ``with FAULTS.enabled("name"):`` turns one on for a block.  The
engine's code checks ``FAULTS.active("name")`` exactly where the real defect would live.
"""

from __future__ import annotations

from pv.faults import FaultRegistry

FAULTS = FaultRegistry("engine")

# --- engine core (checkpoints, generation, export) ---
FAULTS.register("checkpoint_without_tokenizer", "checkpoint saved without the embedded tokenizer")
FAULTS.register("checkpoint_drops_arch_metadata", "architecture metadata keys dropped from a checkpoint")
FAULTS.register("kv_cache_off_by_one", "KV-cache decoding uses a position one off from the true one")
FAULTS.register("batch_stops_at_first_eos", "a batch stops decoding when its first row reaches EOS")
FAULTS.register("eos_ignored", "generation does not stop on the EOS token")
FAULTS.register("padding_attended", "a prompt's tokens attend to its left padding")
FAULTS.register("gguf_vocab_unpadded", "GGUF token list not padded to vocab_size")
FAULTS.register("gguf_gate_up_swapped", "GGUF export writes ffn_gate and ffn_up under each other's names")
FAULTS.register("hf_import_rope_theta_dropped", "HF import ignores the checkpoint's rope_theta (default 10000)")
FAULTS.register(
    "hf_import_qwen2_context_default_2048",
    "HF import gives a Qwen2 config without max_position_embeddings Llama's 2048",
)
FAULTS.register("hf_export_transposed_qk", "HF export writes q_proj and k_proj swapped")
FAULTS.register("greedy_sampling_noise", "greedy decoding adds random noise to logits")
FAULTS.register("top_k_off_by_one", "top-k sampling keeps k + 1 tokens")
FAULTS.register("temperature_after_filter", "top-k / top-p sets chosen before the temperature is applied")
FAULTS.register(
    "rope_table_growth_restarts_positions", "rows a growing RoPE table adds count their positions from 0 again"
)
FAULTS.register("rope_theta_ignored", "RoPE uses theta 10000 whatever the config's rope_theta says")
FAULTS.register("norm_weight_ignored", "RMSNorm normalises but does not apply its learned weight")
# --- training paths ---
FAULTS.register("lora_before_nf4", "LoRA wrapped before the base is quantized to NF4")
FAULTS.register("lora_b_random_init", "a fresh LoRA adapter's B is random instead of zero, so step 0 already differs")
FAULTS.register("lora_scaling_ignored", "LoRA's update is not scaled by alpha / r")
FAULTS.register("adapter_merge_unscaled", "merging an adapter into full-precision linears drops alpha / r")
FAULTS.register("base_left_trainable", "base weights left trainable during LoRA fine-tuning")
FAULTS.register("nan_in_step", "a NaN injected into the loss of a training step")
FAULTS.register("teacher_grads_on", "distillation teacher left with requires_grad on")
FAULTS.register("teacher_dequantized", "quantized teacher dequantized to full precision at load")
FAULTS.register("adapter_shared_state", "an adapter shares parameter storage with another adapter")
FAULTS.register("bf16_repack_left_on", "bitsandbytes' AVX512-BF16 eval-mode weight repack left enabled")
FAULTS.register("pretrain_seed_ignored", "pretraining does not seed torch from its config, so a seed pins nothing")
FAULTS.register("init_checkpoint_ignored", "pretraining --init loads the architecture but not the weights")
FAULTS.register("nf4_as_fp4", "Linear4bit built with its fp4 default instead of nf4")
FAULTS.register("memory_class_inverted", "GPU memory class reported the wrong way round")
FAULTS.register("memory_class_source_unreported", "a memory-class decision names no source, whichever probe decided it")
FAULTS.register("gpu_report_probe_note_dropped", "a no-GPU report does not say what the probe met")
# --- further defects the engine's contracts plant (see contracts/) ---
FAULTS.register("double_quant_ignored", "double quantization requested but the absmax stays fp32")
FAULTS.register("nf4_skipped", "NF4 quantization silently skipped: the base stays full precision")
FAULTS.register("lora_b_frozen", "LoRA B matrices left frozen, so the adapter never moves")
FAULTS.register("lora_targets_ignored", "LoRA target list ignored: every linear layer is wrapped")
FAULTS.register("checkpoint_downcast", "checkpoint tensors silently downcast to fp16 on save")
FAULTS.register("max_tokens_off_by_one", "generation produces one token fewer than max_new_tokens")
FAULTS.register("distill_t2_missing", "the distillation KL term is not multiplied by T squared")
FAULTS.register("distill_mask_ignored", "the distillation KL averages over ignored (padding) positions too")
FAULTS.register("distill_identity_check_off", "distillation accepts a teacher identical to the student")
FAULTS.register("base_copied_per_adapter", "each adapter gets its own copy of the frozen base")
FAULTS.register("adapter_save_stale", "adapter checkpoint written from the untrained initial weights")
FAULTS.register("memory_class_override_ignored", "the PV_GPU_MEMORY_CLASS override is ignored")
FAULTS.register("nvml_missing_raises", "a machine without NVML raises instead of answering 'no GPU'")
FAULTS.register("sampling_global_rng", "seeded sampling draws from the global RNG instead of its own generator")
FAULTS.register("bricks_warmup_timed", "the bench timer keeps the warm-up calls as timed repetitions")
FAULTS.register(
    "timer_retimed_calls_uncounted", "the timer's re-timed repetitions are not counted as calibration calls"
)
FAULTS.register("summary_cpu_cv_from_wall_times", "a brick's CPU-time CV is computed from its wall-clock times")
FAULTS.register("bench_table_cv_as_fraction", "the bench table's cv % columns print the fraction, not the percentage")
FAULTS.register("bricks_optimizer_counts_frozen", "the optimizer brick's params/s counts the frozen base too")
FAULTS.register(
    "hf_import_post_processor_bos_missed", "HF import misses a BOS the tokenizer's post-processor adds (Llama folders)"
)
FAULTS.register(
    "hf_import_llama_class_implies_bos", "HF import gives a BOS to a tokenizer declared as Llama's that adds none"
)
FAULTS.register("hf_import_sliding_window_accepted", "HF import takes a sliding-window Qwen2 as full attention")
FAULTS.register(
    "examples_line_numbers_skip_blanks", "a malformed training row is reported at its row number, not its line"
)
FAULTS.register("generate_bos_flag_ignored", "generate accepts --bos/--no-bos but encodes with the tokenizer's rule")
FAULTS.register("generate_nf4_flag_ignored", "generate --adapter accepts --nf4/--no-nf4 and never applies it")
FAULTS.register("tokenizer_specials_appended", "the special tokens are added after BPE training, not at ids 0-2")
FAULTS.register("tokenizer_cache_key_ignores_size", "the tokenizer cache keys an entry by its corpus alone")
FAULTS.register("package_gguf_first_of_many", "import package:NAME takes the first of several GGUF files")
FAULTS.register("resume_param_names_unchecked", "resuming loads optimizer state by position, whatever it trained")
FAULTS.register("memory_table_decimal_units", "the memory table divides by 1000 but prints KiB, MiB and GiB")
FAULTS.register("bricks_kv_cache_keys_only", "a decode brick plans memory for the keys' half of the KV cache only")
FAULTS.register("generate_args_unchecked", "generate decodes malformed requests instead of refusing them")
FAULTS.register("merge_digest_of_adapter_config", "merge records the sha256 of adapter_config.json as the adapter's")
FAULTS.register("resumed_log_truncated", "a resumed run rewrites log.jsonl, losing the records before the resume")
FAULTS.register("export_command_drops_dtype", "export -f hf --dtype f16 writes the weights in f32")
FAULTS.register("generate_command_drops_top_p", "generate accepts --top-p and samples without it")
FAULTS.register("chat_template_compiled_once", "render_chat renders every template with the first one it compiled")
FAULTS.register("chat_missing_specials_rendered_none", 'render_chat writes "None" where no BOS or EOS token was given')
FAULTS.register("build_cache_ignores_engine_source", "the build cache reuses artefacts built by another engine source")
FAULTS.register("golden_prompt_stripped", "qa --write-golden records the prompt without its trailing newline")
FAULTS.register("gguf_eom_dropped", "GGUF export writes no end-of-message id for a model's third EOS id")
FAULTS.register("manifest_torch_build_dropped", "a checkpoint records torch's version without its build (+cpu, +cu128)")
FAULTS.register("top_p_drops_the_crossing_token", "top-p drops the token whose probability reaches p")
FAULTS.register("top_p_keeps_token_at_exactly_p", "top-p keeps a token whose higher-ranked tokens sum to exactly p")
FAULTS.register("recipe_dashed_keys_unknown", "a recipe key spelled as its option (batch-size) is refused")
FAULTS.register(
    "recipe_listing_params_only", "an unknown recipe key's hint lists parameter names, not the flags' spellings"
)
FAULTS.register(
    "adapter_folder_weights_unchecked", "an adapter folder holding its config is read without checking for its weights"
)
FAULTS.register("package_gguf_none_unsaid", "a package that ships no GGUF file is refused with an empty listing")
FAULTS.register("run_json_keys_unsorted", "a run's JSON files keep their keys in insertion order, not sorted")
FAULTS.register(
    "fused_layers_take_half_precision", "fused decoding takes fp16/bf16 layers, skipping RMSNorm's float32 upcast"
)
FAULTS.register("qa_golden_write_unguarded", "qa --write-golden lets a failed write escape as a traceback")
FAULTS.register("cli_os_error_shown_raw", "a training command prints an OSError as Python renders it, errno and all")
FAULTS.register(
    "recipe_refusal_unattributed", "a refused recipe escapes --config's callback as a traceback, not a usage error"
)
FAULTS.register(
    "nf4_packed_layout_unguarded", "dequantize_weight reads a weight bitsandbytes repacked for AVX512-BF16 as NF4 codes"
)
FAULTS.register(
    "recipe_digest_not_recorded", "a run from a recipe leaves the recipe's path and digest out of its manifest"
)
FAULTS.register("gguf_norms_quantized", "a quantized GGUF export quantizes the norm weights llama.cpp needs in f32")
FAULTS.register("gguf_f16_declared_f32", "an f16 GGUF export declares general.file_type ALL_F32")
FAULTS.register("checkpoint_pad_id_dropped", "a loaded checkpoint's config keeps no pad id instead of the tokenizer's")
FAULTS.register("full_finetune_embeddings_frozen", "a full fine-tune leaves the token embeddings frozen")
FAULTS.register("nan_stop_forgets_checkpoint", "a non-finite stop names no last good checkpoint though one exists")
FAULTS.register(
    "nonfinite_grad_norm_applied", "an update is taken on a non-finite gradient norm when the loss is finite"
)
FAULTS.register(
    "hf_import_eos_list_dropped", "HF import drops a list-valued eos_token_id: generation runs past the end"
)
FAULTS.register("resume_optimizer_state_dropped", "a resumed run restarts the optimizer instead of loading its state")
FAULTS.register("nf4_bias_trainable", "an NF4 layer's bias is left trainable: the frozen base is not frozen")
FAULTS.register("checkpoint_pickle_unnamed", "a pickle handed in as a checkpoint is refused without saying it is one")
FAULTS.register("warmup_skipped", "the learning-rate warm-up is skipped: the first steps run at the full rate")
FAULTS.register("multi_adapter_seed_ignored", "adapters are initialised from the global RNG, not from the run's seed")
# --- the real model (GGUF import, chat, tokenizer truth) ---
FAULTS.register("gguf_import_pretokenizer_ignored", "GGUF import splits text with GPT-2's rule whatever the file names")
FAULTS.register("gguf_add_bos_dropped", "GGUF export writes add_bos_token false whatever the tokenizer's setting")
FAULTS.register("chat_generation_prompt_dropped", "chat rendering drops the assistant's opening turn")
FAULTS.register("adapter_base_unchecked", "an adapter is applied to any base of its shape, not only its own")
FAULTS.register("hf_export_bos_rule_dropped", "HF export leaves out the rule that starts a sequence with BOS")
FAULTS.register("chat_loss_on_prompt", "chat fine-tuning learns the system, user and template tokens too")
FAULTS.register("checkpoint_mmap_kept", "a loaded checkpoint's tensors stay views of one memory map of the file")
FAULTS.register(
    "adapter_config_alpha_dropped", "a saved adapter's config leaves out lora_alpha, so readers use a default"
)
FAULTS.register("gguf_import_eps_default", "GGUF import ignores the file's RMSNorm epsilon and uses 1e-6")
FAULTS.register(
    "gguf_import_context_default_2048", "GGUF import gives a qwen2 file without context_length Llama's 2048"
)
FAULTS.register(
    "gguf_token_type_length_padded", "GGUF import pads a token_type list shorter than the tokens with normal tokens"
)
FAULTS.register("reference_workload_unseeded", "the bench's reference workload draws its matrices from the global RNG")
FAULTS.register(
    "multi_adapter_manifest_unrecorded",
    "a multi-adapter run's step manifests leave out the data digest, seed and settings",
)
FAULTS.register("checkpoint_gguf_export_ignores_dtype", "export_checkpoint_gguf writes f32 whatever type is asked")
FAULTS.register("chat_empty_system_dropped", "generate --chat --system '' renders no system turn")
FAULTS.register("cli_error_read_as_markup", "a command's error message is printed as rich markup, so [brackets] vanish")
FAULTS.register(
    "pair_body_from_line_start", "an instruction pair's body starts at its first line's start, a one-line def included"
)
FAULTS.register("golden_ids_unchecked", "qa takes any list in a golden file's new_ids for token ids")
FAULTS.register("merge_nf4_option_ignored", "merge takes the adapter's method for the base whatever --nf4 says")
FAULTS.register("pv_device_env_ignored", "device resolution ignores $PV_DEVICE")
FAULTS.register("bricks_ttft_two_tokens", "the bench's time to first token decodes two tokens per call")
FAULTS.register("bricks_mlp_width_not_rounded", "a bench brick keeps an MLP width NF4 cannot block on CPU")
FAULTS.register("nvml_probe_reads_first_gpu", "the GPU probe reads NVML's first GPU whatever index it is asked")
FAULTS.register("memory_tied_weights_counted_twice", "the memory estimate counts a tied head's shared weights twice")
FAULTS.register("nonfinite_stop_message_without_step", "a training stop's message does not name the step it stopped at")
FAULTS.register("tokenizer_merges_singletons", "tokenizer training merges pairs that occur only once")
FAULTS.register("tokenizer_training_progress_printed", "training a tokenizer prints its progress lines to stdout")
FAULTS.register("gguf_dequant_through_f16", "GGUF import rounds quantized tensors' dequantized values through float16")
FAULTS.register("inspect_counts_tied_head_twice", "inspect counts a tied head's parameters again beside the embedding")
FAULTS.register("base_snapshot_not_cloned", "lora.base_parameters returns the live base tensors, not a snapshot")
FAULTS.register("golden_tie_compared_past_part", "the golden gate compares the tokens after a near-tie parting")
FAULTS.register(
    "hf_config_single_eos_list_dropped", "HF import drops a config.json EOS list of one id for the tokenizer's EOS"
)
FAULTS.register("qa_throughput_cpu_since_start", "the throughput gate reads the CPU clock since process start")
FAULTS.register(
    "multi_adapter_template_ignored", "finetune --adapters tokenizes with the docstring template whatever it records"
)
FAULTS.register("distill_pairs_prompt_learned", "distillation on instruction pairs takes every next token as a label")
FAULTS.register("distill_vocab_unchecked", "distill starts a run whose student has another vocabulary than the teacher")
FAULTS.register("distill_temperature_one_refused", "distillation refuses temperature 1, the unsoftened distribution")
FAULTS.register("resume_rng_not_restored", "--resume leaves the global RNG as the resuming process has it")
FAULTS.register(
    "multi_adapter_stop_forgets_checkpoint", "a multi-adapter run's non-finite stop logs no last checkpoint"
)
FAULTS.register(
    "multi_adapter_grad_stop_keeps_gradients",
    "a multi-adapter run stopped by a non-finite gradient norm keeps the adapter's gradients (zeroed, not freed)",
)
FAULTS.register(
    "gguf_tensors_keep_checkpoint_dtype", "GGUF export writes an fp16 checkpoint's tensors as F16 in an f32 file"
)
FAULTS.register(
    "checkpoint_memory_child_ignores_dtype",
    "the checkpoint memory measuring child loads the base in fp32 whatever base dtype was asked",
)
FAULTS.register("tokenizer_tokens_drop_added", "EngineTokenizer.tokens() leaves out the tokens added after training")
FAULTS.register(
    "distill_teacher_nf4_settings_ignored",
    "an NF4 teacher is quantized with the default NF4 settings, not the ones given",
)
FAULTS.register(
    "hf_import_default_specials_all_eos", "HF import of a folder naming no special tokens gives EOS every role"
)
FAULTS.register(
    "few_pairs_hold_out_first", "with fewer examples than the validation stride, the first is held out, not the last"
)
FAULTS.register(
    "nf4_misaligned_siblings_kept", "quantize_model leaves in full precision every layer after a misaligned one"
)
FAULTS.register("ddp_close_destroys_foreign_group", "DistContext.close destroys a process group it did not create")
FAULTS.register("ddp_ranks_share_first_gpu", "rank_device leaves a bare cuda device: every rank on the first GPU")
FAULTS.register("pretrain_data_argument_ignored", "pretrain trains on the default corpus, not the data it is given")
FAULTS.register("user_corpus_ignored", "tokenize_corpus reads the default stdlib slice, not the files it is given")
FAULTS.register("gguf_user_defined_as_special", "GGUF import makes USER_DEFINED tokens special tokens")
FAULTS.register("lora_base_upcast", "apply_lora and prepare_qlora cast a bf16 or fp16 base to fp32 with its adapters")
FAULTS.register("rope_freqs_in_default_dtype", "RoPE's inverse frequencies are computed in torch's default dtype")
FAULTS.register("norm_half_not_upcast", "RMSNorm normalises bf16 and fp16 activations in their own precision")
FAULTS.register(
    "gqa_fallback_heads_tiled", "attention without torch's enable_gqa tiles key-value heads instead of repeating each"
)
FAULTS.register("bnb_import_silences_all", "import_bnb raises the root logger's level, not the CPU-kernel logger's")
FAULTS.register("config_odd_head_dim_accepted", "ModelConfig accepts a head_dim that is odd (no rotary pairs)")
FAULTS.register(
    "umask_read_by_setting",
    "current_umask sets the process umask and back to read it where /proc/self/status gives it",
)
FAULTS.register(
    "tokenizer_json_ids_unchecked",
    "a tokenizer JSON whose special_tokens ids disagree with its vocabulary loads with the vocabulary's",
)
FAULTS.register(
    "tokenizer_with_backend_resets_bos", "EngineTokenizer.with_backend gives the default add_bos_token back"
)
FAULTS.register(
    "hf_export_eos_from_tokenizer",
    "HF export writes the tokenizer's EOS for a checkpoint that names one EOS id of its own",
)
FAULTS.register(
    "adapter_nf4_settings_ignored", "a QLoRA adapter is applied on the default NF4 base, not the one its run recorded"
)
FAULTS.register(
    "gguf_rope_freqs_ignored", "GGUF import ignores rope_freqs.weight factors that scale the RoPE frequencies"
)
FAULTS.register("gguf_import_dtype_ignored", "import_gguf gives float32 weights whatever dtype was asked")
FAULTS.register("adapter_loaded_trainable", "load_adapter leaves an adapter loaded for inference trainable")
FAULTS.register("adapter_nf4_blocksize_dropped", "find_adapter reads a QLoRA run's NF4 block size as the default")
FAULTS.register("merge_adapter_merges_active", "merge_adapter folds in the active adapter, not the one it is asked for")
FAULTS.register("footprint_gradients_freed", "tensor_footprint frees the gradients before counting what training keeps")
FAULTS.register("smollm_digits_grouped", "the smollm pre-tokenizer keeps a run of digits as one piece")
FAULTS.register("init_architecture_unchecked", "pretrain --init ignores a --preset of another architecture")
FAULTS.register("cli_qa_unregistered", "python -m engine does not register the qa command")
FAULTS.register("ddp_gloo_on_cuda", "a CUDA run under torchrun joins the process group with gloo, not NCCL")
FAULTS.register("shard_rank_ignored", "every data-parallel rank takes rank 0's rows of a global batch")
FAULTS.register("checkpoint_mixed_dtypes_saved", "save_checkpoint writes a model of mixed dtypes that load refuses")
FAULTS.register("adapter_refusal_leaves_layers", "an adapter load_adapter refuses stays injected in the caller's model")
FAULTS.register("pair_continuation_cut_at_margin", "a body line written left of the body's margin is cut at the margin")
FAULTS.register(
    "val_example_also_trained", "with fewer pairs than 1/val_fraction the validation pair is also trained on"
)
FAULTS.register("chat_template_absence_unchecked", "template chat is taken for a tokenizer without a chat template")
FAULTS.register("build_cache_key_order_matters", "a build-cache key in another insertion order names another artefact")
FAULTS.register(
    "train_summary_read_as_markup", "a training command's JSON summary is printed as rich markup, [brackets] lost"
)
FAULTS.register("atomic_private_mode", "files written atomically keep the temporary file's private 0600 mode")
FAULTS.register("qa_perplexity_window_skips_a_token", "QA perplexity windows leave boundary tokens unscored")
FAULTS.register("qa_golden_first_difference_off_by_one", "the golden gate reports the first differing token one late")
FAULTS.register("qa_finite_counts_nan_only", "the finite-logits gate counts NaN but not infinite logits")
FAULTS.register("memory_estimate_one_adam_moment", "the memory formula counts one AdamW moment per parameter, not two")
FAULTS.register("shards_last_partial_dropped", "token shards leave out a stream's last, partial shard")
FAULTS.register("adapters_spec_split_at_first_colon", "finetune --adapters splits DATA:OUT at the first colon")
FAULTS.register(
    "distill_student_keeps_preset_context", "a distill student keeps its preset's context length and RoPE base"
)
FAULTS.register(
    "finetune_resume_adapter_not_loaded", "a resumed LoRA fine-tune keeps its fresh adapter instead of the checkpoint's"
)
FAULTS.register(
    "qa_throughput_counts_requested_tokens", "the throughput gate credits the tokens asked for, not those decoded"
)
FAULTS.register(
    "ddp_loss_unweighted", "data-parallel training averages the ranks' mean losses, whatever tokens each holds"
)
FAULTS.register("memory_training_counts_the_model", "measured training memory grows from before the model was built")
FAULTS.register(
    "gpu_training_counts_the_model", "on a GPU, measured training memory is the peak less the start, the model included"
)
FAULTS.register("manifest_step_unchecked", "a checkpoint is written with any manifest step, a bool or -1 included")
FAULTS.register("measured_base_always_fp32", "measure_method builds the base in fp32 whatever base_dtype asks")
FAULTS.register("chat_turn_check_skipped", "chat data is labelled even where the template does not split it by turn")
FAULTS.register("hf_config_rope_theta_v5_only", "HF export writes the RoPE base only where transformers 5.x reads it")
FAULTS.register("cli_refusal_traceback", "a command's refusal escapes as a traceback instead of `error:` and exit 2")
FAULTS.register(
    "step_weights_head_from_model", "a tied step file is loaded with the model's own head over the saved embedding"
)
FAULTS.register(
    "ddp_setup_adopts_group_as_own", "setup takes a process group the caller made as its own, so close tears it down"
)
FAULTS.register(
    "hf_export_unadded_bos_dropped", "HF export names no BOS for a tokenizer whose own BOS is not added to prompts"
)
FAULTS.register("inspect_names_read_as_markup", "inspect's tables read brackets in a name or value as rich markup")
FAULTS.register("qa_perplexity_last_pair_skipped", "perplexity leaves a last window of two tokens unscored")
FAULTS.register("latest_pointer_trusted", "latest.json is followed to a step folder without its training state")
FAULTS.register(
    "resume_gpu_states_in_text_order",
    "a resume gives GPUs their saved generator states in the text order of their keys",
)
FAULTS.register(
    "tokenizer_backend_specials_added",
    "EngineTokenizer.encode lets its backend's post-processor add BOS and EOS of its own",
)
FAULTS.register("ddp_task_keeps_shard_view", "after a torchrun run the task keeps its rank's view of the data")
FAULTS.register("grad_norm_reported_after_clip", "the grad_norm a step reports is the norm after clipping")
FAULTS.register("qa_table_detail_cut", "qa's printed table cuts a long detail (a path) to an ellipsis")
FAULTS.register("bench_unknown_bricks_skipped", "bench drops a misspelt brick and measures the others")
FAULTS.register("data_order_from_global_rng", "an epoch's data order is drawn from torch's global generator")
FAULTS.register("adamw_settings_defaulted", "AdamW is built with torch's betas, eps and weight decay, not the config's")
FAULTS.register("measured_model_lr_ignored", "measure_training trains at torch's default rate, not the lr it is given")
FAULTS.register(
    "val_loss_mean_of_batch_means",
    "the validation loss is the mean of the batches' mean losses, not the mean per learned token",
)
FAULTS.register("cuda_index_past_count_accepted", "resolve_device accepts cuda:N on a machine with N CUDA devices")
FAULTS.register("bricks_cuda_unsynchronised", "the brick timer reads the clock without synchronizing the GPU")
FAULTS.register("train_state_unlabelled", "a training checkpoint's train_state.safetensors carries no format label")
FAULTS.register("default_corpus_last_file_uncut", "the default corpus reads its last file whole, past max_bytes")
FAULTS.register("weights_digest_hashes_tied_head", "weights_digest hashes a tied head that no checkpoint file holds")
FAULTS.register(
    "qa_throughput_cpu_clock_sampled",
    "the throughput gate reads CPU time from a clock a CPU-time limit samples at the tick",
)
FAULTS.register(
    "qa_golden_record_length_ignored", "the golden gate decodes as many tokens as the file holds, not as it asks"
)
FAULTS.register("qa_loads_first_mismatch_only", "the loads gate names the first special id that disagrees, not all")
FAULTS.register("generate_pad_ignores_config", "generate fills a finished row with its EOS, not the config's pad")
FAULTS.register(
    "save_refusal_unnamed", "save_checkpoint refuses a tokenizer larger than the model's vocabulary without naming why"
)
FAULTS.register(
    "tokenizer_json_not_canonical",
    "a tokenizer's JSON is written in insertion order, with spaces and non-ASCII escaped",
)
FAULTS.register(
    "checkpoint_tokenizer_refusal_unnamed",
    "a checkpoint without its tokenizer is refused without naming the missing key",
)
FAULTS.register(
    "checkpoint_bool_token_id_accepted", "a checkpoint header's special id of JSON true loads as the token id 1"
)
FAULTS.register(
    "state_dict_loaded_loosely", "model_from_state drops a tensor the architecture lacks instead of refusing the state"
)
FAULTS.register(
    "safetensors_header_unsorted", "save_tensors leaves a safetensors header in the writer's hash-map order"
)
FAULTS.register(
    "tokenizer_cache_ignores_training",
    "the tokenizer cache keys an entry by size and corpus alone, so an older trainer's entry is read back",
)
FAULTS.register("mean_loss_leaves_eval", "mean_loss leaves a model it found training in eval mode")
FAULTS.register(
    "adapter_unrecorded_base_unsaid",
    "an adapter that records no base digest is applied as if its base had matched, unsaid",
)
FAULTS.register(
    "hf_shard_copies_unchecked",
    "a sharded HF import reads each shard whole, so a tensor's last copy wins wherever the index places it",
)
FAULTS.register("q4_block_halves_swapped", "a Q4 block's high nibbles are read as its weights 0-15, the low as 16-31")
FAULTS.register(
    "quantized_embedding_from_kernel_scales",
    "a checkpoint's tied embedding is rebuilt from its head's kernel scales (bfloat16), not the file's float16 ones",
)
FAULTS.register("q4_1_zero_off_by_8", "a Q4_1 block's m is taken as the weight at code 8 (its zero is off by 8 d)")
FAULTS.register("q4_scales_transposed", "a Q4 layer's scale and zero pairs are laid out in the file's row order")
FAULTS.register("q8_block_scales_shifted", "a Q8_0 layer applies each block's scales to the next block's column")
FAULTS.register(
    "native_decode_key_unrotated",
    "the native decoder layer writes a token's key into the cache before its rotary embedding",
)
FAULTS.register("q5_0_high_bits_big_endian", "a Q5_0 block's 32 fifth bits are read as a big-endian uint32")
FAULTS.register("q6_k_scales_unsigned", "a Q6_K block's sixteen int8 sub-block scales are read as uint8")
FAULTS.register("q4_k_min_added", "a Q4_K sub-block's min is added to its weights instead of subtracted")
