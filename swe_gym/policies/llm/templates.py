"""The messages of `LLMPolicy`'s conversation, in mini-swe-agent's text-based style.

``SYSTEM_TEMPLATE`` holds the reply format, ``INSTANCE_TEMPLATE`` the task (``{task}``: the env's reset
observation; ``{submit}``: the submit action) and how to work, ``OBSERVATION_TEMPLATE`` one command's
result, ``FORMAT_ERROR_TEMPLATE`` what the model is told when its reply holds no single command.
"""

SYSTEM_TEMPLATE = """\
You are a software engineer who works in a bash shell, one command at a time, to resolve an issue in a repository.

Every reply has exactly two parts:
1. THOUGHT: a few sentences on what you learned and what you will do next.
2. Exactly ONE bash code block holding ONE command (join several with && or ;).

<format_example>
THOUGHT: I should first see which files the repository holds.

```bash
find . -name '*.py' -not -path './.git/*' | head -n 50
```
</format_example>

A reply without a bash block, or with more than one, is rejected and nothing is run.
"""

INSTANCE_TEMPLATE = """\
{task}

## How to work
1. Find the code the issue is about with grep, and read it with sed -n or cat.
2. Reproduce the problem with a short python3 -c command.
3. Edit the source code with sed -i, or rewrite a file with cat <<'EOF' > FILE, then check your fix.
4. When the fix works, submit: reply with a bash block that holds only the word {submit}.

## Rules
- Exactly ONE bash block per reply, after your THOUGHT.
- Every command runs in a fresh shell in the repository: cd and variables do not carry over.
- No interactive programs (vim, nano, less, a bare python3): they cannot get input.

Example of a reply:

THOUGHT: I need to find where the function from the issue is defined.

```bash
grep -rn "def " --include="*.py" . | head -n 30
```
"""

OBSERVATION_TEMPLATE = "<returncode>{exit_code}</returncode>{note}\n<output>\n{output}\n</output>"

FORMAT_ERROR_TEMPLATE = """\
FORMAT ERROR: {reason}. Nothing was run.
Reply with a THOUGHT, then exactly ONE bash code block holding ONE command, like this:

THOUGHT: why this command.

```bash
ls
```

To finish, reply with a bash block that holds only the word {submit}."""

# -- native tool calling (``tool_calling`` "native", or "auto" while the endpoint may call tools) ----------------

TOOL_SYSTEM_TEMPLATE = """\
You are a software engineer who resolves an issue in a repository by calling tools. Your tools:
{tools}

In each reply, think in a sentence or two, then call a tool. You see each call's result before you reply again.
{fallback}"""

#: What `TOOL_SYSTEM_TEMPLATE` says of each tool it offers.
TOOL_LINES = {
    "bash": "- bash: run one shell command in the repository and see what it printed and its exit code.",
    "str_replace_editor": (
        "- str_replace_editor: view a file with line numbers (command view), create one (create), or replace one "
        "exact piece of its text (str_replace: old_str must appear exactly once)."
    ),
    "submit": "- submit: end the work when the fix is done; your changes are then graded.",
}

#: In "auto" mode, for an endpoint that turns out not to pass the tools on to the model.
TOOL_FALLBACK = """\
If you cannot call tools, reply instead with a THOUGHT and exactly ONE bash code block holding ONE command, like this:

THOUGHT: I should first see which files the repository holds.

```bash
find . -name '*.py' -not -path './.git/*' | head -n 50
```"""

#: The same, in a format error.
TOOL_FALLBACK_SHORT = "If you cannot call tools, reply with a THOUGHT and ONE ```bash block holding one command."

TOOL_INSTANCE_TEMPLATE = """\
{task}

## How to work
1. Find the code the issue is about and read it.
2. Reproduce the problem with a short python3 -c command.
3. Fix the source code, then check your fix.
4. When the fix works, {submit}.

## Rules
- Every bash command runs in a fresh shell in the repository: cd and variables do not carry over.
- No interactive programs (vim, nano, less, a bare python3): they cannot get input.
"""

TOOL_FORMAT_ERROR_TEMPLATE = """\
FORMAT ERROR: {reason}. Nothing was run.
Call one of your tools ({tools}).{fallback} To finish, {submit}."""
