// step_recording.h — what a runner records of one forward pass for the token inspector: for the
// batch's one new token, the residual stream after every layer, what each layer's attention and
// feed-forward block added to it, the output head applied after every layer (the logit lens),
// every layer's attention weights, and each operation's time.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "request/forward_batch.h"

namespace llmwb {

struct StepRecording {
  struct Layer {
    std::vector<float> residual;        // dim
    std::vector<float> attention_out;   // dim
    std::vector<float> ffn_out;         // dim
    std::vector<float> lens_logits;     // vocab: head(residual)
    AttentionRecord attention;          // the token's softmax rows, one per head
  };
  std::vector<Layer> layers;
  struct OpTotal {
    double seconds = 0;
    int calls = 0;
  };
  std::map<std::pair<int, std::string>, OpTotal> ops;   // (layer or -1, op)
  double forward_seconds = 0;
};

}  // namespace llmwb
