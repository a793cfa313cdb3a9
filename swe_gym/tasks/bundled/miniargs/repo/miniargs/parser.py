"""The command line parser."""
from types import SimpleNamespace
from typing import Any, Callable, Dict, List, Optional, Sequence

from .errors import ArgumentError
from .spec import ACTIONS, Option, Positional


def _dest_from_flags(flags: Sequence[str]) -> str:
    longest = max(flags, key=len)
    return longest.lstrip("-").replace("-", "_")


class Parser:
    def __init__(self, prog: str = "prog", description: str = ""):
        self.prog = prog
        self.description = description
        self.options: List[Option] = []
        self.positionals: List[Positional] = []
        self._by_flag: Dict[str, Option] = {}

    # -- declaration -------------------------------------------------------

    def add_option(
        self,
        *flags: str,
        dest: Optional[str] = None,
        action: str = "store",
        type: Callable[[str], Any] = str,
        default: Any = None,
        required: bool = False,
        help: str = "",
        metavar: Optional[str] = None,
    ) -> Option:
        if not flags:
            raise ValueError("at least one flag is required")
        for flag in flags:
            if not flag.startswith("-") or flag in ("-", "--"):
                raise ValueError("invalid option flag: %r" % (flag,))
            if not flag.startswith("--") and len(flag) != 2:
                raise ValueError("short flags must be a single character: %r" % (flag,))
            if flag in self._by_flag:
                raise ValueError("duplicate option flag: %r" % (flag,))
        if action not in ACTIONS:
            raise ValueError("unknown action: %r" % (action,))
        if default is None:
            default = {"store_true": False, "count": 0}.get(action)
        opt = Option(
            flags=tuple(flags),
            dest=dest or _dest_from_flags(flags),
            action=action,
            type=type,
            default=default,
            required=required,
            help=help,
            metavar=metavar,
        )
        self.options.append(opt)
        for flag in flags:
            self._by_flag[flag] = opt
        return opt

    def add_positional(
        self,
        dest: str,
        type: Callable[[str], Any] = str,
        nargs: Optional[str] = None,
        default: Any = None,
        help: str = "",
    ) -> Positional:
        if nargs not in (None, "?", "*"):
            raise ValueError("nargs must be None, '?' or '*'")
        if self.positionals and self.positionals[-1].nargs == "*":
            raise ValueError("no positional may follow a nargs='*' positional")
        pos = Positional(dest=dest, type=type, nargs=nargs, default=default, help=help)
        self.positionals.append(pos)
        return pos

    # -- parsing -----------------------------------------------------------

    def parse(self, argv: Sequence[str]) -> SimpleNamespace:
        argv = list(argv)
        values: Dict[str, Any] = {}
        for opt in self.options:
            values[opt.dest] = list(opt.default or []) if opt.action == "append" else opt.default
        seen = set()
        positional_args: List[str] = []
        i = 0
        while i < len(argv):
            token = argv[i]
            if token == "--":
                positional_args.extend(argv[i + 1:])
                break
            if self._looks_like_option(token):
                i = self._consume_option(argv, i, values, seen)
            else:
                positional_args.append(token)
                i += 1
        for opt in self.options:
            if opt.required and opt.dest not in seen:
                raise ArgumentError(
                    "the following option is required: %s" % opt.display_name,
                    option=opt.flags[0],
                )
        self._assign_positionals(positional_args, values)
        return SimpleNamespace(**values)

    def _looks_like_option(self, token: str) -> bool:
        return token.startswith("-") and token != "-"

    def _lookup(self, flag: str) -> Option:
        opt = self._by_flag.get(flag)
        if opt is None:
            raise ArgumentError("unknown option %s" % flag, option=flag)
        return opt

    def _consume_option(self, argv: List[str], i: int, values: Dict[str, Any], seen: set) -> int:
        """Handle the option token at ``argv[i]``; return the next index."""
        token = argv[i]
        attached: Optional[str] = None
        if token.startswith("--"):
            flag, sep, rest = token.partition("=")
            if sep:
                attached = rest
        else:
            flag, rest = token[:2], token[2:]
            if rest:
                attached = rest
        opt = self._lookup(flag)
        seen.add(opt.dest)

        if not opt.takes_value:
            if attached is not None and token.startswith("--"):
                raise ArgumentError("option %s does not take a value" % flag, option=flag)
            self._apply_flag(opt, values)
            if attached is not None:
                # grouped short flags, e.g. -vvq
                for ch in attached:
                    grouped = self._lookup("-" + ch)
                    if grouped.takes_value:
                        raise ArgumentError(
                            "option -%s needs a value and cannot be grouped" % ch,
                            option="-" + ch,
                        )
                    seen.add(grouped.dest)
                    self._apply_flag(grouped, values)
            return i + 1

        if attached is None:
            if i + 1 >= len(argv) or self._looks_like_option(argv[i + 1]):
                raise ArgumentError("option %s expects a value" % flag, option=flag)
            attached = argv[i + 1]
            i += 1
        self._store(opt, flag, attached, values)
        return i + 1

    @staticmethod
    def _apply_flag(opt: Option, values: Dict[str, Any]) -> None:
        if opt.action == "store_true":
            values[opt.dest] = True
        else:  # count
            values[opt.dest] += 1

    @staticmethod
    def _convert(convert: Callable[[str], Any], text: str, what: str) -> Any:
        try:
            return convert(text)
        except ValueError as exc:
            raise ArgumentError("argument %s: %s" % (what, exc), option=what) from None

    def _store(self, opt: Option, flag: str, text: str, values: Dict[str, Any]) -> None:
        value = self._convert(opt.type, text, flag)
        if opt.action == "append":
            values[opt.dest].append(value)
        else:
            values[opt.dest] = value

    def _assign_positionals(self, args: List[str], values: Dict[str, Any]) -> None:
        args = list(args)
        for pos in self.positionals:
            if pos.nargs == "*":
                values[pos.dest] = [self._convert(pos.type, a, pos.dest) for a in args]
                args = []
            elif args:
                values[pos.dest] = self._convert(pos.type, args.pop(0), pos.dest)
            elif pos.nargs == "?":
                values[pos.dest] = pos.default
            else:
                raise ArgumentError("missing positional argument: %s" % pos.dest)
        if args:
            raise ArgumentError("unrecognized arguments: %s" % " ".join(args))
