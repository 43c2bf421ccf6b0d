"""The error raised for bad user input: files, rows, flags, checkpoints."""


class UserInputError(ValueError):
    """Bad input the user can fix: a malformed row, a missing file, a bad flag.

    The message is one line that names the place (``file:line: reason`` or
    ``--flag: reason``). The command-line tools print just that line and exit
    with status 2 (the traceback only with ``--verbosity=1``); other
    exceptions are bugs and keep their traceback. A `ValueError`, so code that
    catches ValueError keeps working.

    Example:

    >>> raise UserInputError("train.tsv:7: expected 3 columns, got 2")
    Traceback (most recent call last):
    ...
    bert_tf.errors.UserInputError: train.tsv:7: expected 3 columns, got 2

    A library error names the parameter (``pooling='cls' differs ...``);
    ``argument="pooling"`` lets the command-line tools name the flag of the
    same name instead (``--pooling='cls' differs ...``): each mention of the
    message's arguments becomes the flag (of a name without "_", which may
    be a plain word, only ``name=``). `argument` may be a tuple of names
    (a message about two parameters), or a `{parameter: flag name}` dict
    where the tool's flag is named otherwise (``eval_split`` is
    ``--tfds_split_eval``).
    """

    def __init__(self, message, argument=None):
        super().__init__(message)
        if isinstance(argument, dict):
            self.flags = {name: flag for name, flag in argument.items() if name}
        elif isinstance(argument, (tuple, list)):
            self.flags = {name: name for name in argument}
        else:
            self.flags = {argument: argument} if argument else {}
        self.arguments = tuple(self.flags)
        self.argument = self.arguments[0] if self.arguments else None
