// forward_observer.h — a look inside one forward pass (the token inspector): LlamaModel calls
// it, when given one, at each layer's seams. Ordinary steps pass none and pay nothing.
#pragma once

#include "backend/backend.h"
#include "request/forward_batch.h"

namespace llmwb {

class ForwardObserver {
 public:
  virtual ~ForwardObserver() = default;
  // A backend the pass runs its operations through instead of its own (one that times them);
  // null: its own.
  virtual Backend* backend() { return nullptr; }
  // Before layer `layer`'s first operation; -1 before the embedding and after the last layer
  // (the final norm and the head).
  virtual void begin_layer(int /*layer*/) {}
  // Where layer `layer`'s attention weights go for the sequence marked capture_attention
  // (null: not recorded).
  virtual AttentionRecord* attention_record(int /*layer*/) { return nullptr; }
  // n rows of width dim, one per new token: what the layer's attention (after its output
  // projection) and its feed-forward block added to the residual stream, and the stream after it.
  virtual void attention_output(int /*layer*/, const float* /*rows*/, int /*n*/, int /*dim*/) {}
  virtual void ffn_output(int /*layer*/, const float* /*rows*/, int /*n*/, int /*dim*/) {}
  virtual void residual(int /*layer*/, const float* /*rows*/, int /*n*/, int /*dim*/) {}
};

}  // namespace llmwb
