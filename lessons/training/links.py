"""The training lesson's link keys: each names one choice in the address bar (`?tr_model=reverser&tr_steps=400`).

Defined once here; the page and its tests import them. Changing one would break every link shared so far.
"""

MODEL = "tr_model"  # the model to retrain, by its recipe's name ("sorter", "sorter-cheater", "reverser")
STEPS = "tr_steps"  # training steps, live.MIN_STEPS to live.MAX_STEPS
LEARNING_RATE = "tr_lr"  # the learning rate as its button writes it ("0.003"), one of live.LEARNING_RATES
SEED = "tr_seed"  # the seed of the starting weights (the training words use the next one)
WORD = "tr_word"  # the example word whose attention is drawn after a run
