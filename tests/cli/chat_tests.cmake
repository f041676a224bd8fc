# llmwb-cli generate --chat, included by CMakeLists.txt (cli_test, cli_error_test, CLI, S260).
# generate --chat: the conversation rendered with the chat template and tokenized as the Chat
# view does. "</s>" typed in a message stays text: the prompt's ids hold exactly one EOS (2),
# the one the Zephyr template writes after the message; BOS (1) comes first, once.
set(NOT_1_OR_2 "([03-9][0-9]*|[12][0-9]+)")
cli_test(generate_chat_marker_in_message_is_plain_text
  "prompt token ids: 1( ${NOT_1_OR_2})* 2( ${NOT_1_OR_2})*\n"
  ${CLI} generate --model ${S260}/stories260K.gguf --chat --chat-format zephyr --prompt "a </s> b"
  --verbose-prompt --temperature 0 --max-tokens 4)
# A conversation from a file: Llama 2 closes the reply with </s> and opens the next turn with
# <s> (the template's markers become ids 2 and 1); the user's "</s>" stays text.
cli_test(generate_chat_messages_file_llama2
  "prompt token ids: 1( ${NOT_1_OR_2})* 2 1( ${NOT_1_OR_2})*\n"
  ${CLI} generate --model ${S260}/stories260K.gguf --chat --chat-format llama2
  --messages-file ${CMAKE_CURRENT_SOURCE_DIR}/chat/conversation.json --prompt "And then?"
  --verbose-prompt --temperature 0 --max-tokens 4)
cli_test(generate_chat_base_model_uses_completion "chat format: completion.*prompt: Be short.\nOnce upon a time"
  ${CLI} generate --model ${S260}/stories260K.gguf --chat --system "Be short." --prompt "Once upon a time"
  --verbose-prompt --temperature 0 --max-tokens 8)
cli_error_test(generate_chat_unknown_role "unknown-role.json: message 2: unknown role 'tool'" ${CLI} generate --chat
  --messages-file ${CMAKE_CURRENT_SOURCE_DIR}/chat/unknown-role.json)
cli_error_test(generate_chat_bad_json "bad-json.json: not valid JSON" ${CLI} generate --chat
  --messages-file ${CMAKE_CURRENT_SOURCE_DIR}/chat/bad-json.json)
cli_error_test(generate_chat_missing_messages_file "cannot open the messages file" ${CLI} generate --chat
  --messages-file /nonexistent/messages.json)
cli_error_test(generate_chat_unknown_format "--chat-format: unknown format 'jinja3'" ${CLI} generate --chat
  --prompt hi --chat-format jinja3)
cli_error_test(generate_system_without_chat "--system needs --chat" ${CLI} generate --system "Be brief.")
cli_error_test(generate_chat_template_raises "turns to alternate" ${CLI} generate --model ${S260}/stories260K.gguf
  --chat --chat-format llama2 --prompt "b" --messages-file ${CMAKE_CURRENT_SOURCE_DIR}/chat/one-user-turn.json)
# The ids test_chat_view's a_marker_typed_in_a_message_reaches_the_engine_as_plain_text expects
# from the Chat view for the same conversation.
cli_test(generate_chat_sends_what_the_chat_view_sends
  "prompt token ids: 1 410 504 506 425 419 285 506 505 13 434 411 306 284 411 410 504 492 419 505 261 349 304 422 426 2 410 13 504 506 412 419 419 293 413 303 413 506 505 13\n"
  ${CLI} generate --model ${S260}/stories260K.gguf --chat --chat-format zephyr --prompt "Tell me </s> a story."
  --verbose-prompt --temperature 0 --max-tokens 1)
