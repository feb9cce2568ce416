"""The small models of the exporters' corpus, shared by the two environments that export them:
make_corpus.py in the PyPI one (tools/venvs/pypi.txt: torch's dynamo exporter, transformers 5)
and optimum_export.py in the Optimum one (tools/venvs/optimum.txt: transformers 4.57), so that
both exporters write the same architectures at the same sizes. Configurations only (keyword
arguments of transformers' configuration classes, understood by both transformers releases) and
a word-level tokenizer; nothing is imported until asked for, and nothing is downloaded.
"""
import pathlib

SEQUENCE = 8
VOCAB = 1000
# The small decoders' common shape: 2 layers of hidden 64.
SMALL = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, vocab_size=VOCAB, max_position_embeddings=128)
GPT2 = dict(n_embd=64, n_layer=2, n_head=4, vocab_size=VOCAB, n_positions=128, bos_token_id=0,
            eos_token_id=0)
BERT = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
            vocab_size=VOCAB, max_position_embeddings=128)
# Whisper's encoder reads 2 x max_source_positions frames of num_mel_bins: 80 x 3000, as the
# real ones do (Optimum's export feeds that many, whatever the configuration says).
WHISPER = dict(vocab_size=VOCAB, num_mel_bins=80, encoder_layers=2, decoder_layers=2,
               encoder_attention_heads=4, decoder_attention_heads=4, d_model=64,
               encoder_ffn_dim=128, decoder_ffn_dim=128, max_source_positions=1500,
               max_target_positions=64, pad_token_id=0, bos_token_id=1, eos_token_id=2,
               decoder_start_token_id=1)
WHISPER_FRAMES = 2 * WHISPER["max_source_positions"]


def save_tokenizer(folder):
    """A word-level tokenizer of VOCAB words into a checkpoint folder (GenAI's builder writes the
    tokenizer's files beside the model, and Optimum copies them, so both need one)."""
    import tokenizers
    import transformers
    vocab = {f"t{i}": i for i in range(VOCAB)}
    words = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab=vocab, unk_token="t0"))
    words.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    transformers.PreTrainedTokenizerFast(tokenizer_object=words, unk_token="t0", bos_token="t1",
                                         eos_token="t2", pad_token="t0").save_pretrained(folder)


def save_checkpoint(model, folder):
    """A Hugging Face checkpoint folder of `model` (random weights) with the tokenizer."""
    folder = pathlib.Path(folder)
    model.save_pretrained(folder)
    save_tokenizer(folder)
