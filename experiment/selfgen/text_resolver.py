"""The generation audit's re-solver of integer word problems: it reads the problem TEXT and nothing else.

`read_problem(text)` tokenizes the text, reads each statement as clauses about who holds how many of what
(quantities with their object nouns and units, the operations the verbs state), keeps the amounts per holder and
object, reads what the question asks for, and answers it. Where the text does not determine an answer it says
so and gives no answer ("ill-posed: ..."), which the audit counts as a disagreement with any label:
  - the question asks about an object, a holder or a unit the text gives no quantity of;
  - a statement it cannot read (a garbled or unknown clause, a missing number such as "some" or "a few");
  - "more" with no earlier quantity of that object, or with two candidates (ambiguous);
  - contradictory statements (one holder given two different amounts, someone giving to themself,
    "after selling some" with nothing sold);
  - a result that is negative (more given, lost or taken than there was; needing fewer than one has) or a
    division that leaves a remainder where whole things are shared.
Who and where: a pronoun (he, him, his; she, her) is the last person named whose gender (a list of first names and
of nouns such as "sister") is not the other one, or the only person named; "they" is everyone named (their amounts
summed in the question; refused as a subject). Possessives name holders ("Tom's sister", "in his bag" -> Tom's bag,
"2 of her pencils" only when they are the subject's). A place is in/on/at a, the, his, her or <Name>'s <noun>; the
question may ask "how many apples are in the box" and "how many apples are left" (the one holder of apples).
What is counted: a unit or container before "of" is part of the object ("5 bags of rice" counts bags of rice and is
no amount of rice; "2 bags" then means them); "Each bag has 4 apples" multiplies the bags a holder has or got.
Comparisons and transfers: "3 more/fewer apples than Tom" needs Tom's amount; "how many more apples does Anna have
than Tom" is their difference (never negative); "gives Anna 2", "gets 3 from Tom", "takes 2 from Ben" change both
amounts where they are known.
It is written from the reading rules above, not from the sentence forms of any task family: it imports nothing
from the generator (experiment.selfgen.task_generation), the family's templates or the generated code, and it
never sees a label. Quantities of another object are read and left aside ("7 apples in a crate and 2 toy cars on
the table; how many toy cars": 2).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

RESOLVER_KIND = "deterministic program"

ILL_POSED = "ill-posed"


@dataclass(frozen=True)
class Solution:
    answer: str | None  # None: the text does not determine an answer (ill-posed)
    reasoning: str


class IllPosed(Exception):
    """The text does not determine an answer; the message says why."""


NUMBER_WORDS = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
                "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
                "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20}
VAGUE_AMOUNTS = {"some", "several", "many", "few", "a few", "lots", "plenty", "enough"}
UNITS = {"meters", "meter", "centimeters", "centimeter", "kilometers", "kilometer", "grams", "gram", "kilograms",
         "kilogram", "liters", "liter", "milliliters", "milliliter", "pounds", "pound", "ounces", "ounce", "cups",
         "cup", "inches", "inch", "feet", "foot", "miles", "mile", "minutes", "minute", "hours", "hour", "dollars",
         "dollar", "cents", "cent"}
DAYS = {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday", "January", "February",
        "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}
PRONOUNS = {"he", "she", "they"}
# a pronoun's other cases (him, her), read as the pronoun; a possessive (his, her, their) names its owner
OBJECT_PRONOUNS = {"him": "he", "her": "she", "them": "they"}
POSSESSIVES = {"his": "he", "her": "she", "their": "they"}
# first names and nouns of people whose pronoun is "she" or "he"; a name in neither list may be either
FEMALE = {"Anna", "Maria", "Lucy", "Priya", "Emma", "Mia", "Sofia", "Zoe", "Lena", "Yuki", "Sara", "Sarah", "Lily",
          "Ava", "Olivia", "Grace", "Chloe", "Ella", "Amy", "Kate", "Jane", "Mary", "Julia", "Laura", "Nina", "Rosa",
          "Hana", "Aisha", "Fatima", "Leila", "Mei", "Alice", "Emily", "Hannah", "Ruby", "Isla", "Ada", "Eva", "Ivy",
          "Nora", "Rita", "Tina", "Vera", "Wendy", "Bella", "Clara", "Diana", "Elena", "Fiona", "Helen", "Iris",
          "Jess", "Kim", "Linda", "Maya", "Nadia", "Olga", "Paula", "Rachel", "Sophie", "Uma", "Zara",
          "sister", "mother", "mom", "aunt", "daughter", "girl", "woman", "grandmother", "grandma", "niece", "wife"}
MALE = {"Tom", "Ben", "Sam", "Omar", "Leo", "Jack", "Ravi", "Noah", "Ivan", "Kofi", "John", "James", "David", "Mark",
        "Paul", "Peter", "Luke", "Max", "Alex", "Adam", "Liam", "Lucas", "Ethan", "Oliver", "Harry", "Henry", "Oscar",
        "Carlos", "Diego", "Juan", "Luis", "Ahmed", "Ali", "Hassan", "Kenji", "Hiro", "Raj", "Arjun", "Dev", "Felix",
        "Hugo", "Igor", "Jamal", "Karl", "Mike", "Nick", "Owen", "Ryan", "Tim", "Victor", "Will", "Bob", "Dan", "Eric",
        "Fred", "George", "Joe", "Kevin", "Matt", "Pedro", "Sean", "Tony",
        "brother", "father", "dad", "uncle", "son", "boy", "man", "grandfather", "grandpa", "nephew", "husband"}
PERSON_NOUNS = {"sister", "mother", "mom", "aunt", "daughter", "girl", "woman", "grandmother", "grandma", "niece",
                "wife", "brother", "father", "dad", "uncle", "son", "boy", "man", "grandfather", "grandpa", "nephew",
                "husband", "friend", "cousin", "teacher", "neighbor", "classmate", "coach"}
# capitalized words that begin a sentence and are no one's name
NOT_NAMES = {"Each", "Every", "It", "In", "On", "At", "After", "Before", "Then", "If", "This", "That", "These",
             "Those", "Its", "Some", "All", "How", "What", "Now", "Later"}
THEY = "they#everyone"  # the question's "they" where more than one person is named: all of them
EACH = "each "  # a subject "Each bag ...": what every one of those things holds
# words that end a noun phrase after a number
NOUN_STOP = {"in", "on", "to", "of", "more", "fewer", "left", "out", "and", "each", "with", "from", "at", "for",
             "the", "a", "an", "them", "it", "per", "into", "among", "between", "already", "now", "then", "equally",
             "away", "altogether", "total", "all", "but", "so", "than", "this", "that", "is", "are", "was", "were",
             "does", "did", "do", "has", "have", "had", "there"}
ADVERBS = {"already", "now", "then", "also", "still", "just", "later", "first", "finally", "today", "yesterday"}

# the verbs it reads, by what they do to the holder's amount
HAVE = {"has", "had", "have", "owns", "owned", "own", "holds", "held", "hold", "keeps", "kept", "contains",
        "contained"}
GAIN = {"buys": "buy", "bought": "buy", "buy": "buy", "finds": "find", "found": "find", "find": "find",
        "gets": "get", "got": "get", "get": "get", "receives": "receive", "received": "receive",
        "collects": "collect", "collected": "collect", "collect": "collect", "picks": "pick", "picked": "pick",
        "earns": "earn", "earned": "earn", "wins": "win", "won": "win", "makes": "make", "made": "make",
        "bakes": "bake", "baked": "bake", "pick": "pick", "earn": "earn", "win": "win", "make": "make", "bake": "bake"}
LOSE = {"lost": "lose", "loses": "lose", "lose": "lose", "eats": "eat", "ate": "eat", "eat": "eat", "uses": "use",
        "used": "use", "sells": "sell", "sold": "sell", "sell": "sell", "spends": "spend", "spent": "spend",
        "breaks": "break", "broke": "break", "drops": "drop", "dropped": "drop", "drinks": "drink", "drank": "drink",
        "drink": "drink", "use": "use", "spend": "spend", "break": "break", "drop": "drop"}
GIVE = {"gives", "gave", "give"}
TAKE = {"takes", "took", "take", "removes", "removed", "remove"}
NEED = {"needs", "needed", "need", "wants", "wanted", "want"}
SHARE = {"shares", "shared", "share", "splits", "split", "divides", "divided", "divide", "puts", "put"}
QUESTION_VERBS = {**GAIN, **LOSE, "give": "give", "gives": "give", "gave": "give", "take": "take", "took": "take",
                  "takes": "take"}
AUXILIARIES = {"does", "did", "do", "is", "are", "was", "were", "will"}

IRREGULAR_PLURALS = {"shelves": "shelf", "knives": "knife", "leaves": "leaf", "loaves": "loaf", "halves": "half",
                     "wolves": "wolf", "scarves": "scarf", "children": "child", "people": "person", "men": "man",
                     "women": "woman", "mice": "mouse", "geese": "goose", "feet": "foot", "teeth": "tooth"}
_TOKEN = re.compile(r"\d+|[A-Za-z]+|'s\b|[.,?!]")
_READABLE = re.compile(r"[A-Za-z0-9 .,?!'\-]*")


def singular(noun: str) -> str:
    """A crude singular of an English noun phrase's last word (apples -> apple, boxes -> box)."""
    words = noun.split()
    last = words[-1]
    if last in IRREGULAR_PLURALS:
        last = IRREGULAR_PLURALS[last]
    elif last in ("cookies", "movies", "pies", "ties", "brownies", "smoothies"):
        last = last[:-1]
    elif last.endswith("ies") and len(last) > 4:
        last = last[:-3] + "y"
    elif re.search(r"(ss|x|z|ch|sh)es$", last):
        last = last[:-2]
    elif last.endswith("s") and not last.endswith("ss") and len(last) > 2:
        last = last[:-1]
    return " ".join(words[:-1] + [last])


@dataclass
class Quantity:
    amount: int
    obj: str | None  # singular noun phrase (with its unit: "meter of ribbon"); None: not named here
    more: bool = False  # "N more"
    of_them: bool = False  # "N of them"
    whose: str | None = None  # "N of his apples": his


@dataclass
class World:
    """What the statements establish: amounts per holder and object, and tallies per action."""

    held: dict[str, dict[str, int]] = field(default_factory=dict)
    tallies: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)  # (action, holder) -> obj -> n
    needs: dict[str, dict[str, int]] = field(default_factory=dict)
    shares: dict[str, tuple[str, int]] = field(default_factory=dict)  # receiver noun -> (obj, each)
    per_item: dict[str, dict[str, int]] = field(default_factory=dict)  # "Each bag has 4 apples": bag -> apple -> 4
    people: list[str] = field(default_factory=list)
    containers: list[str] = field(default_factory=list)
    last_obj: dict[str, str] = field(default_factory=dict)
    steps: list[str] = field(default_factory=list)

    def mention(self, person: str) -> None:
        if person in self.people:
            self.people.remove(person)
        self.people.append(person)

    @staticmethod
    def gender(person: str) -> str | None:
        """'she', 'he' or None (either) for a name or a person noun ("Tom's sister": she)."""
        word = person.split()[-1]
        return "she" if word in FEMALE else "he" if word in MALE else None

    def tallied(self, holder: str, obj: str) -> bool:
        return any(obj in counts for (_, who), counts in self.tallies.items() if who == holder)

    @staticmethod
    def by_head(counts: dict[str, int], obj: str) -> str:
        """The one thing of `counts` that `obj` names by its head ("slice" for "slice of pizza"), or obj itself."""
        named = [known for known in counts if known.startswith(f"{obj} of ")]
        return named[0] if obj not in counts and len(named) == 1 else obj

    def check_units(self, holder: str, obj: str) -> None:
        """One holder's amounts of one thing are in one unit ("3 meters of ribbon" and "40 centimeters of ribbon")."""
        known = set(self.held.get(holder, {})) | {o for (_, h), counts in self.tallies.items() if h == holder for o in counts}
        base = obj.split(" of ")[-1]
        for other in known:
            if other != obj and other.split(" of ")[-1] == base:
                raise IllPosed(f"a unit mismatch: {holder}'s {base} is given as {other} and as {obj}")

    def tally(self, action: str, holder: str, obj: str, amount: int) -> None:
        self.check_units(holder, obj)
        counts = self.tallies.setdefault((action, holder), {})
        counts[obj] = counts.get(obj, 0) + amount

    def set_held(self, holder: str, obj: str, amount: int) -> None:
        self.check_units(holder, obj)
        known = self.held.setdefault(holder, {})
        if obj in known and known[obj] != amount:
            raise IllPosed(f"contradictory statements: {holder} has {known[obj]} {obj}(s) and also {amount}")
        known[obj] = amount
        self.last_obj[holder] = obj
        self.steps.append(f"{holder}: {amount} {obj}")

    def change(self, holder: str, obj: str, delta: int, why: str) -> None:
        self.check_units(holder, obj)
        known = self.held.get(holder, {})
        if obj not in known:
            raise IllPosed(f"{why}: how many {obj}(s) {holder} had is not given")
        if known[obj] + delta < 0:
            raise IllPosed(f"{why}: {holder} has only {known[obj]} {obj}(s), the result would be negative")
        before = known[obj]
        known[obj] += delta
        self.last_obj[holder] = obj
        self.steps.append(f"{holder}: {before} {'+' if delta >= 0 else '-'} {abs(delta)} = {known[obj]} {obj}(s)")


class Reader:
    """Tokens of one clause with a cursor."""

    def __init__(self, tokens: list[str]):
        self.tokens, self.at = tokens, 0

    def peek(self, offset: int = 0) -> str | None:
        index = self.at + offset
        return self.tokens[index] if index < len(self.tokens) else None

    def take(self) -> str:
        token = self.peek()
        if token is None:
            raise IllPosed("a clause ends where more was expected")
        self.at += 1
        return token

    def accept(self, *words: str) -> bool:
        if self.peek() is not None and self.peek().lower() in words:
            self.at += 1
            return True
        return False

    def done(self) -> bool:
        return self.at >= len(self.tokens)

    def rest(self) -> str:
        return " ".join(self.tokens[self.at:])


def _number(reader: Reader) -> int | None:
    token = reader.peek()
    if token is None:
        return None
    if token.isdigit():
        reader.take()
        return int(token)
    if token.lower() in NUMBER_WORDS:
        reader.take()
        return NUMBER_WORDS[token.lower()]
    return None


def _is_noun(token: str | None) -> bool:
    return token is not None and token.isalpha() and token.islower() and token not in NOUN_STOP \
        and token not in GAIN and token not in LOSE and token not in HAVE


def _is_number(token: str | None) -> bool:
    return token is not None and (token.isdigit() or token.lower() in NUMBER_WORDS)


def _noun_phrase(reader: Reader) -> str | None:
    """Up to two lowercase words ending a quantity ("toy cars"), with what a unit or a container before "of" holds
    ("meters of ribbon", "bags of rice")."""
    words = []
    while _is_noun(reader.peek()) and len(words) < 2:
        words.append(reader.take())
    if words and reader.peek() == "of" and (words[-1] in UNITS or _is_noun(reader.peek(1))):
        reader.take()
        rest = _noun_phrase(reader)
        if rest is None:
            raise IllPosed(f"'{' '.join(words)} of' names no object")
        return f"{singular(' '.join(words))} of {rest}"
    return singular(" ".join(words)) if words else None


def _quantity(reader: Reader) -> Quantity | None:
    token = reader.peek()
    if token is not None and (token.lower() in VAGUE_AMOUNTS or (token == "a" and reader.peek(1) == "few")):
        raise IllPosed(f"a missing number: '{token}{' few' if token == 'a' else ''}' is no amount")
    amount = _number(reader)
    if amount is None:
        return None
    if reader.accept("more"):
        return Quantity(amount, _noun_phrase(reader), more=True)
    if reader.peek() == "of" and reader.peek(1) == "them":
        reader.at += 2
        return Quantity(amount, None, of_them=True)
    if reader.peek() == "of" and reader.peek(1) in POSSESSIVES and _is_noun(reader.peek(2)):
        whose = reader.tokens[reader.at + 1]
        reader.at += 2
        return Quantity(amount, _noun_phrase(reader), whose=whose)
    return Quantity(amount, _noun_phrase(reader))


def _place(reader: Reader, owner, prepositions: tuple[str, ...] = ("in", "on", "at", "inside")) -> str | None:
    """'in a box', 'on the table' -> 'the box', 'the table'; "in Tom's bag", 'in his bag' -> "Tom's bag" (`owner`
    names whom a possessive means); day phrases are skipped."""
    while reader.peek() in prepositions:
        word, noun = reader.peek(1), reader.peek(2)
        if word in ("a", "an", "the") and _is_noun(noun):
            reader.at += 3
            return f"the {singular(noun)}"
        if word in POSSESSIVES and _is_noun(noun):
            reader.at += 3
            return f"{owner(word)}'s {singular(noun)}"
        if word and word[0].isupper() and noun == "'s" and _is_noun(reader.peek(3)):
            reader.at += 4
            return f"{word}'s {singular(reader.tokens[reader.at - 1])}"
        if word in DAYS:
            reader.at += 2
            continue
        return None
    return None


def _skip_days(reader: Reader) -> None:
    while reader.peek() in ("on", "in") and reader.peek(1) in DAYS:
        reader.at += 2


class Problem:
    """One problem text read into a World, then its question answered."""

    def __init__(self, text: str):
        self.text = " ".join(str(text).split())
        self.world = World()
        self.subject: str | None = None
        self.verb: str | None = None
        self.selling_some = False

    # ---- the whole text ----

    def solve(self) -> int:
        if not _READABLE.fullmatch(self.text):
            raise IllPosed("the text has characters a word problem does not (code, symbols or garbage)")
        tokens = _TOKEN.findall(self.text)
        sentences, current = [], []
        for token in tokens:
            current.append(token)
            if token in ".?!":
                sentences.append(current)
                current = []
        if current:
            raise IllPosed("the text does not end with a question mark")
        questions = [s for s in sentences if s[-1] == "?"]
        if len(questions) != 1 or sentences[-1][-1] != "?":
            raise IllPosed(f"{len(questions)} questions: one question, at the end, is needed")
        for sentence in sentences[:-1]:
            self.statement(sentence[:-1])
        return self.question(sentences[-1][:-1])

    # ---- statements ----

    def statement(self, tokens: list[str]) -> None:
        if [t.lower() for t in tokens[:4]] == ["after", "selling", "some", ","]:
            self.selling_some, tokens = True, tokens[4:]
        clauses, current = [], []
        for token in tokens:
            if token in ("and", ",") and current:
                clauses.append(current)
                current = []
            elif token != ",":
                current.append(token)
        if not current:
            raise IllPosed("an empty clause")
        clauses.append(current)
        self.verb = None
        for clause in clauses:
            self.clause(Reader(clause))

    def _subject(self, reader: Reader) -> None:
        token = reader.peek()
        if token is None:
            raise IllPosed("an empty clause")
        if token == "There" and reader.peek(1) in ("are", "is", "were", "was"):
            reader.at += 2
            self.subject, self.verb = "there", "there"
        elif token in ("Each", "Every") and _is_noun(reader.peek(1)):
            self.subject = f"{EACH}{singular(reader.peek(1))}"
            reader.at += 2
        elif token in ("A", "The", "An", "a", "the", "an") and reader.peek(1) and reader.peek(1).islower():
            self.subject = f"the {singular(reader.peek(1))}"
            reader.at += 2
            self.world.containers.append(self.subject)
        elif token.lower() in POSSESSIVES and _is_noun(reader.peek(1)):  # "Her sister has ..."
            reader.at += 2
            self.subject = self._owned(self._refer(token), reader.tokens[reader.at - 1])
        elif token.lower() in PRONOUNS:
            reader.take()
            self.subject = self._refer(token)
            if self.subject == THEY:
                raise IllPosed(f"'{token}' is more than one person: who holds what is not said")
        elif self._is_name(token):
            reader.take()
            self.world.mention(token)
            self.subject = token
            if reader.peek() == "'s" and _is_noun(reader.peek(1)):  # "Tom's sister has ..."
                reader.at += 2
                self.subject = self._owned(token, reader.tokens[reader.at - 1])
        elif self.subject is None:
            raise IllPosed(f"a clause with no one doing anything: '{reader.rest()}'")
        # else: the clause continues the previous subject ("... and found 3 more", "... and 2 pens on the table")

    @staticmethod
    def _is_name(token: str) -> bool:
        return token[0].isupper() and token.isalpha() and token not in DAYS and token not in NOT_NAMES

    def _owned(self, owner: str, noun: str) -> str:
        """ "Tom's sister" (a person) or "Tom's box" (a container) as a holder."""
        holder = f"{owner}'s {singular(noun)}"
        if singular(noun) in PERSON_NOUNS:
            self.world.mention(holder)
        else:
            self.world.containers.append(holder)
        return holder

    def _refer(self, pronoun: str) -> str:
        """The person a pronoun (he, him, his, she, her, they...) names: the last one named whose gender is not the
        other one's; "they" where more than one person is named: everyone (THEY)."""
        word = pronoun.lower()
        case = POSSESSIVES.get(word) or OBJECT_PRONOUNS.get(word) or word
        if case == "they" and len(self.world.people) > 1:
            return THEY
        candidates = [person for person in self.world.people if self.world.gender(person) in (None, case)]
        if not candidates and len(self.world.people) == 1:  # "Ben has 7 cars. She buys 4 more", "Tom ... they"
            candidates = self.world.people
        if not candidates:
            raise IllPosed(f"'{pronoun}' refers to no one named before")
        return candidates[-1]

    def _named(self, reader: Reader) -> str | None:
        """The person or holder a name ("Tom", "Tom's sister") or an object pronoun ("him", "her") after a verb,
        "from" or "than" names; None where the next words are neither."""
        token = reader.peek()
        if token is not None and token.lower() in OBJECT_PRONOUNS:
            reader.take()
            person = self._refer(token)
            if person == THEY:
                raise IllPosed(f"'{token}' is more than one person")
            return person
        if token is None or not self._is_name(token):
            return None
        reader.take()
        if reader.peek() == "'s" and _is_noun(reader.peek(1)):
            reader.at += 2
            return f"{token}'s {singular(reader.tokens[reader.at - 1])}"
        return token

    def clause(self, reader: Reader) -> None:
        self._subject(reader)
        while reader.accept(*ADVERBS):
            pass
        token = reader.peek()
        if token is not None and (token.lower() in HAVE | set(GAIN) | set(LOSE) | GIVE | TAKE | NEED | SHARE):
            self.verb = reader.take().lower()
        elif self.verb is None:
            raise IllPosed(f"a clause it cannot read: '{reader.rest()}'")
        if self.subject.startswith(EACH) and self.verb not in HAVE:
            raise IllPosed(f"'{self.subject} {self.verb}': only what each one holds is read")
        if self.verb == "there":
            self._there(reader)
        elif self.verb in HAVE:
            self._have(reader)
        elif self.verb in GAIN:
            self._gain(reader, GAIN[self.verb])
        elif self.verb in LOSE:
            self._lose(reader, LOSE[self.verb])
        elif self.verb in GIVE:
            self._give(reader)
        elif self.verb in TAKE:
            self._take(reader)
        elif self.verb in NEED:
            self._need(reader)
        elif self.verb in SHARE:
            self._share(reader)
        if not reader.done():
            raise IllPosed(f"a clause it cannot read to the end: '{reader.rest()}'")

    def _object(self, quantity: Quantity, holder: str) -> str:
        known = self.world.held.get(holder, {})
        if quantity.obj is not None and not quantity.more:
            return self.world.by_head(known, quantity.obj)
        if quantity.more and quantity.obj is not None:
            if quantity.obj not in known and not self.world.tallied(holder, quantity.obj):
                raise IllPosed(f"'{quantity.amount} more {quantity.obj}(s)' but no earlier amount of {quantity.obj}(s) "
                               f"for {holder}")
            return quantity.obj
        if holder in self.world.last_obj:
            candidates = set(known) | {self.world.last_obj[holder]}
            if len(candidates) > 1 and not quantity.of_them:
                raise IllPosed(f"'{quantity.amount}{' more' if quantity.more else ''}' could be any of "
                               f"{', '.join(sorted(candidates))}: ambiguous")
            return self.world.last_obj[holder]
        raise IllPosed(f"'{quantity.amount}{' more' if quantity.more else ''}' names no object and none came before")

    def _quantity_or_fail(self, reader: Reader) -> Quantity:
        quantity = _quantity(reader)
        if quantity is None:
            raise IllPosed(f"a missing number in '{reader.rest() or 'an empty clause'}'")
        if quantity.whose is not None and self._refer(quantity.whose) != self.subject:
            raise IllPosed(f"'{quantity.amount} of {quantity.whose} {quantity.obj}(s)' are not {self.subject}'s")
        return quantity

    def _groups(self, reader: Reader, count: Quantity) -> tuple[str, int] | None:
        """'N bags with M apples in each bag' -> (apple, N*M)."""
        if not reader.accept("with"):
            return None
        each = self._quantity_or_fail(reader)
        if each.obj is None:
            raise IllPosed("'with N' names no object")
        if not (reader.accept("in") and reader.accept("each") and reader.peek() is not None
                and singular(reader.take()) == count.obj):
            raise IllPosed(f"'{count.amount} {count.obj}(s) with {each.amount} {each.obj}(s)' does not say in each what")
        self.world.steps.append(f"{count.amount} {count.obj}(s) x {each.amount} {each.obj}(s) = {count.amount * each.amount}")
        return each.obj, count.amount * each.amount

    def _there(self, reader: Reader) -> None:
        quantity = self._quantity_or_fail(reader)
        if quantity.obj is None or quantity.more:
            raise IllPosed("'there are N' names no object")
        grouped = self._groups(reader, quantity)
        place = _place(reader, self._refer)
        obj, amount = grouped or (quantity.obj, quantity.amount)
        holder = place or f"there#{len(self.world.held)}"
        self.world.held.setdefault(holder, {})
        if obj in self.world.held[holder] and place:
            raise IllPosed(f"contradictory statements: {place} holds {obj}(s) twice")
        self.world.held[holder][obj] = self.world.held[holder].get(obj, 0) + amount
        self.world.last_obj[holder] = obj  # "There are 5 apples in a box. Ben takes 2 out of the box."
        self.world.steps.append(f"{holder}: {amount} {obj}(s)")

    def _have(self, reader: Reader) -> None:
        holder = self.subject
        quantity = self._quantity_or_fail(reader)
        fewer = not quantity.more and quantity.obj is None and reader.accept("fewer")
        if fewer:  # "4 fewer apples than Tom"
            quantity = Quantity(quantity.amount, _noun_phrase(reader), more=True)
        if quantity.more:
            if not reader.accept("than"):
                raise IllPosed(f"'has {quantity.amount} {'fewer' if fewer else 'more'}' is no amount")
            other = self._named(reader)
            if other is None:
                raise IllPosed(f"'{quantity.amount} {'fewer' if fewer else 'more'} than' no one named")
            return self._compared(holder, quantity, fewer, other)
        if holder.startswith(EACH):
            if quantity.obj is None:
                raise IllPosed(f"'{holder} has {quantity.amount}' names no object")
            _place(reader, self._refer)
            self.world.per_item.setdefault(holder[len(EACH):], {})[quantity.obj] = quantity.amount
            self.world.steps.append(f"each {holder[len(EACH):]}: {quantity.amount} {quantity.obj}(s)")
            return
        left = reader.accept("left")
        obj = self._object(quantity, holder)
        _place(reader, self._refer)
        if self.selling_some and left:
            before = self.world.held.get(holder, {}).get(obj)
            if before is None:
                raise IllPosed(f"how many {obj}(s) {holder} had before selling is not given")
            if quantity.amount >= before:
                raise IllPosed(f"contradictory statements: after selling some, {holder} has {quantity.amount} of {before}")
            self.world.tally("sell", holder, obj, before - quantity.amount)
            self.world.held[holder][obj] = quantity.amount
            self.world.steps.append(f"{holder} sold {before} - {quantity.amount} = {before - quantity.amount} {obj}(s)")
            self.selling_some = False
            return
        if self.selling_some:
            raise IllPosed("'after selling some' is followed by no amount left")
        if left and obj not in self.world.held.get(holder, {}):
            raise IllPosed(f"'{quantity.amount} left' but no earlier amount of {obj}(s) for {holder}")
        self.world.set_held(holder, obj, quantity.amount)

    def _compared(self, holder: str, quantity: Quantity, fewer: bool, other: str) -> None:
        """ "Anna has 3 more apples than Tom" / "4 fewer than him": Tom's amount and the difference."""
        obj = self._object(Quantity(quantity.amount, quantity.obj), other)
        if obj not in self.world.held.get(other, {}):
            raise IllPosed(f"'{quantity.amount} {'fewer' if fewer else 'more'} than {other}': how many {obj}(s) "
                           f"{other} has is not given")
        base = self.world.held[other][obj]
        amount = base - quantity.amount if fewer else base + quantity.amount
        if amount < 0:
            raise IllPosed(f"{quantity.amount} fewer than {other}'s {base}: the result would be negative")
        self.world.steps.append(f"{holder}: {base} {'-' if fewer else '+'} {quantity.amount} = {amount} {obj}(s)")
        self.world.set_held(holder, obj, amount)

    def _gain(self, reader: Reader, action: str) -> None:
        holder = self.subject
        quantity = self._quantity_or_fail(reader)
        grouped = None if quantity.more else self._groups(reader, quantity)
        if grouped:
            obj, amount = grouped
        else:
            obj, amount = self._object(quantity, holder), quantity.amount
        _place(reader, self._refer)
        if reader.accept("from"):  # "gets 3 apples from Tom": Tom has 3 fewer, where his amount is known
            source = self._named(reader)
            if source is None:
                raise IllPosed(f"'{holder} {action}s {amount} from' no one named")
            if source == holder:
                raise IllPosed(f"contradictory statements: {holder} {action}s from themself")
            if obj in self.world.held.get(source, {}):
                self.world.change(source, obj, -amount, f"{holder} {action}s {amount} from {source}")
        _skip_days(reader)
        earlier = obj in self.world.tallies.get((action, holder), {})  # "picked 7 flowers and 5 more flowers"
        self.world.tally(action, holder, obj, amount)
        if obj in self.world.held.get(holder, {}):
            self.world.change(holder, obj, amount, f"{holder} {action}s {amount}")
        elif quantity.more and not earlier:
            raise IllPosed(f"'{amount} more' but no earlier amount of {obj}(s) for {holder}")
        else:
            self.world.last_obj[holder] = obj
            self.world.steps.append(f"{holder} {action}s {amount} {obj}(s)")

    def _lose(self, reader: Reader, action: str) -> None:
        holder = self.subject
        quantity = self._quantity_or_fail(reader)
        obj = self._object(quantity, holder)
        self.world.change(holder, obj, -quantity.amount, f"{holder} {action}s {quantity.amount}")
        self.world.tally(action, holder, obj, quantity.amount)

    def _give(self, reader: Reader) -> None:
        giver = self.subject
        token = reader.peek()
        if token is not None and (self._is_name(token) or token.lower() in OBJECT_PRONOUNS
                                  and _is_number(reader.peek(1))):  # "gives Anna 9 more", "gives him 3"
            receiver = self._named(reader)
            if receiver == giver:
                raise IllPosed(f"contradictory statements: {giver} gives to themself")
            quantity = self._quantity_or_fail(reader)
            obj = self._object(quantity, giver if giver in self.world.last_obj else receiver)
            if obj in self.world.held.get(giver, {}):
                self.world.change(giver, obj, -quantity.amount, f"{giver} gives {receiver} {quantity.amount}")
                self.world.tally("give", giver, obj, quantity.amount)
                if obj not in self.world.held.get(receiver, {}):
                    self.world.mention(receiver)
                    return
            self.world.change(receiver, obj, quantity.amount, f"{giver} gives {receiver} {quantity.amount}")
            self.world.tally("receive", receiver, obj, quantity.amount)
            self.world.mention(receiver)
            return
        away = reader.accept("away")  # "gives away 4"
        quantity = self._quantity_or_fail(reader)
        obj = self._object(quantity, giver)
        if away or reader.accept("away"):
            receivers = None
        elif not reader.accept("to"):
            raise IllPosed(f"'{giver} gives {quantity.amount}' to no one")
        elif reader.accept("each"):
            if not reader.accept("of"):
                raise IllPosed("'to each' of whom is not said")
            count = self._quantity_or_fail(reader)
            if count.obj is None:
                raise IllPosed("'to each of N' names no one")
            total = quantity.amount * count.amount
            self.world.steps.append(f"{quantity.amount} {obj}(s) to each of {count.amount} {count.obj}(s) = {total}")
            self.world.tally("give", giver, obj, total)
            if obj in self.world.held.get(giver, {}):
                self.world.change(giver, obj, -total, f"{giver} gives away {total}")
            return
        else:
            receivers = self._named(reader) or reader.take()
            if receivers == giver:
                raise IllPosed(f"contradictory statements: {giver} gives to themself")
            if receivers[0].isupper():
                self.world.mention(receivers)
            self.world.mention(giver)  # "He gives 3 to Emma. How many does he have": still the giver
        self.world.change(giver, obj, -quantity.amount, f"{giver} gives {quantity.amount}")
        self.world.tally("give", giver, obj, quantity.amount)
        if receivers and obj in self.world.held.get(receivers, {}):
            self.world.change(receivers, obj, quantity.amount, f"{receivers} receives {quantity.amount}")

    def _take(self, reader: Reader) -> None:
        taker = self.subject
        quantity = self._quantity_or_fail(reader)
        source = _place(reader, self._refer, ("from",))  # "takes 2 from the box", "from Tom's box"
        if source is None and reader.accept("from"):  # "takes 2 from Ben"
            source = self._named(reader)
            if source is None:
                raise IllPosed(f"'{taker} takes {quantity.amount} from' no one named")
        elif source is None:
            if not reader.accept("out"):
                raise IllPosed(f"'{taker} takes {quantity.amount}' from nowhere")
            if reader.peek() == "of":
                source = _place(reader, self._refer, ("of",))
            elif self.world.containers:
                source = self.world.containers[-1]
            else:
                raise IllPosed(f"'{taker} takes {quantity.amount} out' of nothing named")
        if source is None or source == taker:
            raise IllPosed(f"'{taker} takes {quantity.amount}' out of no other holder")
        if source not in self.world.held:
            raise IllPosed(f"how much {source} holds is not given")
        obj = self._object(quantity, source)
        self.world.change(source, obj, -quantity.amount, f"{taker} takes {quantity.amount} out of {source}")
        self.world.tally("take", taker, obj, quantity.amount)
        if obj in self.world.held.get(taker, {}):
            self.world.change(taker, obj, quantity.amount, f"{taker} takes {quantity.amount}")

    def _need(self, reader: Reader) -> None:
        holder = self.subject
        quantity = self._quantity_or_fail(reader)
        if quantity.obj is None or quantity.more:
            raise IllPosed("'needs N' names no object")
        self.world.needs.setdefault(holder, {})[quantity.obj] = quantity.amount
        self.world.last_obj[holder] = quantity.obj
        self.world.steps.append(f"{holder} needs {quantity.amount} {quantity.obj}(s)")

    def _share(self, reader: Reader) -> None:
        holder = self.subject
        quantity = self._quantity_or_fail(reader)
        obj = self._object(quantity, holder)
        reader.accept("equally")
        if not (reader.accept("among", "between", "into") or (reader.accept("to") and reader.accept("each"))):
            raise IllPosed("a share among no one")
        count = self._quantity_or_fail(reader)
        if count.obj is None or count.amount == 0:
            raise IllPosed("a share among no one")
        if quantity.amount % count.amount:
            raise IllPosed(f"{quantity.amount} {obj}(s) shared equally among {count.amount} leaves a remainder of "
                           f"{quantity.amount % count.amount}: whole things cannot be shared so")
        self.world.shares[count.obj] = (obj, quantity.amount // count.amount)
        self.world.steps.append(f"{quantity.amount} / {count.amount} = {quantity.amount // count.amount} {obj}(s) each")

    # ---- the question ----

    def question(self, tokens: list[str]) -> int:
        reader = Reader(tokens)
        if not (reader.accept("how") and reader.accept("many")):
            raise IllPosed(f"a question it cannot read: '{' '.join(tokens)}'")
        more = reader.accept("more")
        fewer = not more and reader.accept("fewer")
        asked = _noun_phrase(reader)
        if asked is None:
            raise IllPosed(f"the question names no object: '{' '.join(tokens)}'")
        aux = reader.take().lower()
        if aux not in AUXILIARIES:
            raise IllPosed(f"a question it cannot read: '{' '.join(tokens)}'")
        if reader.accept("there"):
            return self._there_question(asked, reader, tokens)
        if aux in ("are", "is", "were", "was"):  # "are left", "are in the box", "are left in the box"
            left = reader.accept("left")
            place = _place(reader, self._refer)
            if left or place:
                self._trailing(reader)
                self._end(reader, tokens)
                return self._amount(place, asked) if place else self._only_holder(asked)
        if reader.accept("each"):
            receiver = singular(reader.take())
            if receiver not in self.world.shares:
                raise IllPosed(f"no share among {receiver}s is stated")
            obj, each = self.world.shares[receiver]
            reader.accept("get", "have", "receive", "hold")
            self._end(reader, tokens)
            if obj != asked:
                raise IllPosed(f"the question asks about {asked}(s); the share is of {obj}(s)")
            return each
        holder = self._asked_holder(reader)
        verb = reader.take().lower() if not reader.done() else None
        if verb in HAVE:
            if (more or fewer) and reader.accept("than"):  # "how many more apples does Anna have than Tom"
                other = self._named(reader)
                self._end(reader, tokens)
                return self._difference(holder, other, asked, fewer)
            self._trailing(reader)
            self._end(reader, tokens)
            if more or fewer:
                raise IllPosed("'how many more ... have' compares with nothing")
            return self._amount(holder, asked)
        if fewer:
            raise IllPosed("'how many fewer' compares with nothing")
        if verb in NEED:
            self._end(reader, tokens)
            need = self.world.needs.get(holder, {}).get(asked)
            if need is None:
                raise IllPosed(f"the question asks how many {asked}(s) {holder} needs; the text states no such need")
            if not more:
                return need
            have = self._amount(holder, asked)
            if have > need:
                raise IllPosed(f"{holder} needs {need} and already has {have}: 'how many more' would be negative")
            self.world.steps.append(f"{need} - {have} = {need - have}")
            return need - have
        if verb in QUESTION_VERBS:
            action = QUESTION_VERBS[verb]
            reader.accept("away", "out")
            self._trailing(reader)
            self._end(reader, tokens)
            if more:
                raise IllPosed("'how many more' compares with nothing")
            counts = self.world.tallies.get((action, holder), {})
            amount = self._count(counts, asked)
            if amount is None:
                raise IllPosed(f"the question asks how many {asked}(s) {holder} {action}s; the text gives no such amount")
            return amount
        raise IllPosed(f"a question it cannot read: '{' '.join(tokens)}'")

    def _asked_holder(self, reader: Reader) -> str:
        token = reader.take()
        if token.lower() in PRONOUNS:
            return self._refer(token)
        if token.lower() in POSSESSIVES and _is_noun(reader.peek()):  # "does her sister have"
            return f"{self._refer(token)}'s {singular(reader.take())}"
        if token in ("the", "a") and reader.peek():
            return f"the {singular(reader.take())}"
        if token not in self.world.people:
            raise IllPosed(f"the question asks about {token}, whom the text never mentions")
        if reader.peek() == "'s" and _is_noun(reader.peek(1)):  # "does Tom's sister have"
            reader.at += 2
            return f"{token}'s {singular(reader.tokens[reader.at - 1])}"
        return token

    @staticmethod
    def _trailing(reader: Reader) -> None:
        """What may end a question and changes nothing: "now", "left", "altogether", "in total", "in all"."""
        reader.accept("now", "left")
        reader.accept("altogether")
        if reader.accept("in"):
            reader.accept("total", "all")

    def _there_question(self, asked: str, reader: Reader, tokens: list[str]) -> int:
        place = _place(reader, self._refer)
        self._trailing(reader)
        self._end(reader, tokens)
        if place is not None:
            return self._amount(place, asked)
        amounts = [amount for held in self.world.held.values() if (amount := self._count(held, asked)) is not None]
        if not amounts:
            raise IllPosed(f"the question asks about {asked}(s), of which the text gives no amount")
        if len(amounts) > 1:
            self.world.steps.append(f"{' + '.join(map(str, amounts))} = {sum(amounts)} {asked}(s)")
        return sum(amounts)

    def _only_holder(self, asked: str) -> int:
        """ "How many apples are left?" with no place: the amount of the one holder of apples."""
        holders = [holder for holder, held in self.world.held.items() if asked in held]
        if len(holders) != 1:
            raise IllPosed(f"the question asks what is left of {asked}(s) and not where: "
                           f"{len(holders)} holders of {asked}(s)")
        return self.world.held[holders[0]][asked]

    def _count(self, counts: dict[str, int], asked: str) -> int | None:
        """The amount of `asked` in counts, with what the things counted each hold ("3 bags", "each bag has 4
        apples": 12 apples); None where there is none."""
        total, found = counts.get(asked, 0), asked in counts
        for item, number in counts.items():
            each = self.world.per_item.get(item, {}).get(asked)
            if each is not None:
                self.world.steps.append(f"{number} {item}(s) x {each} {asked}(s) = {number * each}")
                total, found = total + number * each, True
        return total if found else None

    def _difference(self, holder: str, other: str | None, asked: str, fewer: bool) -> int:
        if other is None:
            raise IllPosed("'than' names no one")
        mine, theirs = self._amount(holder, asked), self._amount(other, asked)
        difference = theirs - mine if fewer else mine - theirs
        if difference < 0:
            raise IllPosed(f"{holder} has {mine} and {other} {theirs}: 'how many {'fewer' if fewer else 'more'}' "
                           "would be negative")
        self.world.steps.append(f"{max(mine, theirs)} - {min(mine, theirs)} = {difference}")
        return difference

    def _amount(self, holder: str, asked: str) -> int:
        if holder == THEY:  # "how many apples do they have": everyone named
            amounts = [self._amount(person, asked) for person in self.world.people]
            self.world.steps.append(f"{' + '.join(map(str, amounts))} = {sum(amounts)} {asked}(s)")
            return sum(amounts)
        if holder not in self.world.held:
            raise IllPosed(f"the question asks about {holder}, of which the text gives no amount")
        held = self.world.held[holder]
        asked = self.world.by_head(held, asked)
        self.world.check_units(holder, asked)
        amount = self._count(held, asked)
        if amount is None:
            given = ", ".join(sorted(held)) or "nothing"
            raise IllPosed(f"the question asks about {asked}(s); the text gives {holder} an amount of {given} only")
        return amount

    @staticmethod
    def _end(reader: Reader, tokens: list[str]) -> None:
        if not reader.done():
            raise IllPosed(f"a question it cannot read to the end: '{' '.join(tokens)}'")


def read_problem(text: str) -> Solution:
    """The answer of an integer word problem from its text alone, or no answer and why (ill-posed)."""
    problem = Problem(text)
    try:
        answer = problem.solve()
    except IllPosed as why:
        return Solution(None, f"{ILL_POSED}: {why}")
    steps = "; ".join(problem.world.steps)
    return Solution(str(answer), f"{steps}; answer {answer}" if steps else f"answer {answer}")
