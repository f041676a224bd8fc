# Speculative decoding (--spec, --spec-k, --spec-p-min) on the commands that take engine flags: greedy text
# unchanged, statistics in the JSON, and bad values answered with the flag's name.
cli_test(generate_spec_ngram_same_text "Once upon a time, there was a little girl named Lily"
  ${CLI} generate --model ${S260}/stories260K.gguf --spec ngram --temperature 0 --max-tokens 40)
cli_test(generate_spec_self_int4_same_text "Once upon a time, there was a little girl named Lily"
  ${CLI} generate --model ${S260}/stories260K.gguf --spec self-int4 --spec-k 4 --temperature 0 --max-tokens 40)
cli_test(generate_spec_draft_json "\"speculative\":\\{\"acceptance_rate\":1\\.0,\"accepted\":[1-9][0-9]*,\"drafted\":[1-9][0-9]*,\"drafts\":[1-9][0-9]*,\"mean_acceptance_length\":[2-9]"
  ${CLI} generate --model ${S260}/stories260K.gguf --spec draft:${S260}/hf --json --temperature 0 --max-tokens 40)
cli_test(generate_spec_layers_stats "speculation layers \\| [0-9]+ drafted"
  ${CLI} generate --model ${S260}/stories260K.gguf --spec layers:3 --temperature 0 --max-tokens 20)
cli_test(bench_spec_json "\"acceptance_per_position\".*\"mean_acceptance_length\": [1-9]"
  ${CLI} bench --model ${S260}/stories260K.gguf -p 0 -n 32 -r 1 --threads 1 --spec ngram:1:2 --spec-k 3 --json)
cli_test(serve_bench_spec_json "\"method\": \"self_int4\""
  ${CLI} serve-bench --model ${S260}/stories260K.gguf --concurrency 2 --num-requests 2 --input-len 8 --output-len 8
  --spec self-int4 --json)
cli_error_test(generate_bad_spec "--spec: 'medusa' is not draft:PATH, ngram\\[:MIN:MAX\\], self-int4 or layers:K"
  ${CLI} generate --spec medusa)
cli_error_test(generate_bad_spec_ngram "--spec: 'ngram:3:1' has MAX below MIN" ${CLI} generate --spec ngram:3:1)
cli_error_test(generate_spec_k_without_spec "--spec-k: needs --spec" ${CLI} generate --spec-k 3)
cli_error_test(bench_bad_spec_k "--spec-k" ${CLI} bench --spec ngram --spec-k many)
cli_test(generate_spec_p_min_same_text "Once upon a time, there was a little girl named Lily"
  ${CLI} generate --model ${S260}/stories260K.gguf --spec self-int4 --spec-k 8 --spec-p-min 0.7 --temperature 0 --max-tokens 40)
cli_test(bench_spec_p_min_auto_json "\"draft_p_min\": \"auto\""
  ${CLI} bench --model ${S260}/stories260K.gguf -p 0 -n 16 -r 1 --threads 1 --spec layers:3 --json)
cli_test(bench_spec_p_min_json "\"draft_p_min\": 0\\.35"
  ${CLI} bench --model ${S260}/stories260K.gguf -p 0 -n 16 -r 1 --threads 1 --spec layers:3 --spec-k 4 --spec-p-min 0.35 --json)
cli_error_test(generate_spec_p_min_one "--spec-p-min: must be below 1"
  ${CLI} generate --spec self-int4 --spec-p-min 1)
cli_error_test(generate_spec_p_min_word "--spec-p-min: 'high' is not a number"
  ${CLI} generate --spec self-int4 --spec-p-min high)
cli_error_test(generate_spec_p_min_ngram "--spec-p-min: ngram guesses carry no probability"
  ${CLI} generate --spec ngram --spec-p-min 0.5)
cli_error_test(generate_spec_p_min_without_spec "--spec-p-min: needs --spec" ${CLI} generate --spec-p-min 0.5)
cli_error_test(generate_spec_too_many_layers "speculative.layers: 9 is not fewer than the target's 5 layers"
  ${CLI} generate --model ${S260}/stories260K.gguf --spec layers:9)
cli_error_test(generate_spec_missing_draft "no-such-draft.gguf"
  ${CLI} generate --model ${S260}/stories260K.gguf --spec draft:no-such-draft.gguf)

# stories260K made 8x wider (make-model --from --widen): the same function at 64 times the
# matrix bytes, so its greedy story is stories260K's, and stories260K drafts for it.
cli_test(make_model_widen "widened 8x, dim 512, ffn 1376, 64 heads / 32 KV heads of 8"
  ${CLI} make-model --from ${S260}/stories260K.gguf --widen 8 --dtype f16 --out ${CMAKE_CURRENT_BINARY_DIR}/stories260K-x8.gguf)
set_tests_properties(cli_make_model_widen PROPERTIES FIXTURES_SETUP wide_stories)
cli_test(generate_widened_same_story "Once upon a time, there was a little girl named Lily"
  ${CLI} generate --model ${CMAKE_CURRENT_BINARY_DIR}/stories260K-x8.gguf --temperature 0 --max-tokens 40)
cli_test(generate_widened_drafted_by_its_source "\"speculative\":\\{\"acceptance_rate\":1\\.0,"
  ${CLI} generate --model ${CMAKE_CURRENT_BINARY_DIR}/stories260K-x8.gguf --spec draft:${S260}/stories260K.gguf
  --spec-k 4 --temperature 0 --max-tokens 40 --json)
set_tests_properties(cli_generate_widened_same_story cli_generate_widened_drafted_by_its_source
  PROPERTIES FIXTURES_REQUIRED wide_stories)
cli_error_test(make_model_widen_with_arch "--arch does not go with --from"
  ${CLI} make-model --from ${S260}/stories260K.gguf --widen 2 --arch llama-110m --out ${CMAKE_CURRENT_BINARY_DIR}/never.gguf)
cli_error_test(make_model_widen_quantized "--dtype: a widened model is f32, f16 or bf16, not 'q4_0'"
  ${CLI} make-model --from ${S260}/stories260K.gguf --widen 2 --dtype q4_0 --out ${CMAKE_CURRENT_BINARY_DIR}/never.gguf)
cli_error_test(make_model_widen_zero "--widen"
  ${CLI} make-model --from ${S260}/stories260K.gguf --widen 0 --out ${CMAKE_CURRENT_BINARY_DIR}/never.gguf)
cli_error_test(make_model_noise_without_from "--noise goes with --from MODEL"
  ${CLI} make-model --arch llama-110m --noise 0.1 --out ${CMAKE_CURRENT_BINARY_DIR}/never.gguf)
# --spec-k auto weighs what a target and a draft pass cost once the engine has learnt it: the
# table names the costs, the JSON carries them, and --trace lines too.
cli_test(bench_spec_auto_names_its_costs
  "k auto weighed by cost: a target pass [0-9.]+ ms \\+ [0-9.]+ ms a token, a draft pass [0-9.]+ ms"
  ${CLI} bench --model ${S260}/stories260K.gguf -p 0 -n 48 -r 1 --threads 1 --spec layers:3)
cli_test(bench_spec_auto_cost_json
  "\"cost\": {[^}]*\"draft_pass_ms\": [0-9.e+-]+,[^}]*\"target_fixed_ms\": [0-9.e+-]+,[^}]*\"target_per_token_ms\": [0-9.e+-]+"
  ${CLI} bench --model ${S260}/stories260K.gguf -p 0 -n 48 -r 1 --threads 1 --spec layers:3 --json)
