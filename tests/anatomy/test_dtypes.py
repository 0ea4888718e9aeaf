"""The whole model runs in bfloat16 too (the dtype a GPU user would pick), close to float32."""

import torch

from anatomy.checkpoints.pretrained import load_pretrained


def test_embedded_model_in_bfloat16_stays_finite_and_close_to_float32(embedded, hf_tokenizer):
    half = load_pretrained(device="cpu", dtype=torch.bfloat16)
    encoded = hf_tokenizer(["time flies like an arrow", "fruit flies"], padding=True, return_tensors="pt")
    with torch.inference_mode():
        full = embedded.model(encoded.input_ids, encoded.token_type_ids, encoded.attention_mask, trace=True)
        reduced = half.model(encoded.input_ids, encoded.token_type_ids, encoded.attention_mask, trace=True)
    assert half.model.embeddings.token.weight.dtype == torch.bfloat16
    for weights in reduced.attentions:
        assert torch.isfinite(weights).all()
        assert torch.allclose(weights.float().sum(-1), torch.ones(2, 12, weights.size(2)), atol=1e-2)
    real = encoded.attention_mask.bool()
    similarity = torch.cosine_similarity(full.last_hidden_state[real], reduced.last_hidden_state[real].float(), dim=-1)
    assert similarity.min() > 0.99, f"lowest cosine similarity per token: {similarity.min():.4f}"
