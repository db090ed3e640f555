"""The web inbox in headless Chromium (Debian's package, driven by Playwright).

harness-local runs the LLM agent on the scripted model, which asks bob a question and
then finishes. alice and bob each have their own browser context (their own tab
storage), as two people on two machines would.

1. alice starts a task in her inbox; the model asks bob; bob's inbox shows the task
   first, marked as waiting on him, without a reload; bob answers in the page; alice sees
   the task complete, live; typing `/` offers the card's commands.
2. Markup in a task (its name, its goal, a message) renders as text: the DOM holds no
   element it would have made, and no script it carried ran.
3. With `--auth jwt`, each person signs in with a token from `harness-local token`: the
   same round trip works, the token is in no URL or storage, and a forged token (alice's
   name, another key's signature) is refused in words and shows none of her tasks.
4. A draft typed while the previous message is on its way is kept when its answer comes.
5. The page asks for what it shows (a `historyLength`), and a burst of events on the open
   task's stream reads the task a few times, not once an event.
6. An answer the model streams shows, growing, in the open task while it is still working
   (two screenshots), and ends as the stored answer, once.
7. What waits on bob is listed soonest due first, each with its due time, and the open
   question says by when to answer (issue 52).
8. A stream cut by a proxy mid-answer resumes where it stopped: the page subscribes again
   with `Last-Event-ID`, and the answer ends whole, nothing missing, nothing twice.

A screenshot of each step goes to $HARNESS_UI_ARTIFACTS (default: a temporary folder,
printed).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import tempfile
import time
import urllib.request

from pathlib import Path

import pytest

from playwright.sync_api import Page, expect, sync_playwright


CHROMIUM = os.environ.get('HARNESS_CHROMIUM', '/usr/bin/chromium')
WAIT_MS = 15_000
QUESTION = 'Which colour should the shed be?'
ANSWER = 'Painted it blue.'
INJECTIONS = [
    '<img src=x onerror="window.__pwned=1">',
    '<script>window.__pwned=1</script>',
    '"><svg onload="window.__pwned=1">',
    '[click me](javascript:window.__pwned=1)',
    '<a href="javascript:window.__pwned=1">x</a>',
    '<iframe srcdoc="<script>parent.__pwned=1</script>"></iframe>',
    # Slow to match for a careless pattern: the page must stay responsive.
    '[' * 100_000 + 'x](y',
]


def binary() -> Path:
    if os.environ.get('HARNESS_BIN'):
        return Path(os.environ['HARNESS_BIN'])
    target = os.environ.get('CARGO_TARGET_DIR') or str(Path.home() / '.cache' / 'harness' / 'target')
    return Path(target) / 'debug' / 'harness-local'


def free_port() -> int:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


@pytest.fixture(scope='module')
def artifacts() -> Path:
    path = Path(os.environ.get('HARNESS_UI_ARTIFACTS') or tempfile.mkdtemp(prefix='harness-ui-'))
    path.mkdir(parents=True, exist_ok=True)
    print(f'screenshots in {path}')
    return path


ASKS_BOB = {'turns': [
    {'tool_calls': [{'name': 'ask_participant', 'arguments': {
        'participant_id': 'bob', 'question': QUESTION}}]},
    {'text': ANSWER},
]}
# An answer in 20 pieces, 300 ms apart; one carries markup, which must show as text.
STREAMED = [('' if i == 0 else ' ') + f'Stroke {i + 1:02} of 20 paints the shed blue.'
            for i in range(20)]
STREAMED[7] += ' <img src=x onerror="window.__pwned=1">'
STREAMS = {'turns': [{'chunks': STREAMED, 'chunk_delay_ms': 300}]}


def serve(work: Path, *flags: str, script: dict = ASKS_BOB):
    """harness-local on a free port with the scripted model (by default, the one that
    asks bob); its URL."""
    path = work / 'script.json'
    path.write_text(json.dumps(script))
    port = free_port()
    log = open(work / 'server.log', 'wb')  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [str(binary()), '--listen', f'127.0.0.1:{port}', '--state-dir', str(work / 'state'),
         '--agent', 'llm', '--model', f'scripted:{path}', *flags],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        env={k: v for k, v in os.environ.items() if not k.startswith('HARNESS_')},
    )
    url = f'http://127.0.0.1:{port}'
    deadline = time.monotonic() + 20
    while True:
        try:
            urllib.request.urlopen(f'{url}/.well-known/agent-card.json', timeout=2)
            break
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                pytest.fail((work / 'server.log').read_text(errors='replace'))
            time.sleep(0.1)
    try:
        yield url
    finally:
        proc.kill()
        proc.wait()
        log.close()


@pytest.fixture(scope='module')
def harness():
    yield from serve(Path(tempfile.mkdtemp(prefix='harness-ui-')))


@pytest.fixture(scope='module')
def streaming_harness():
    """A harness whose model streams its answer slowly."""
    yield from serve(Path(tempfile.mkdtemp(prefix='harness-ui-stream-')), script=STREAMS)


@pytest.fixture(scope='module')
def jwt_harness():
    """A harness verifying tokens, and how to mint one for a participant."""
    work = Path(tempfile.mkdtemp(prefix='harness-ui-jwt-'))

    def token(who: str, state: Path = work / 'state') -> str:
        return subprocess.run(
            [str(binary()), 'token', who, '--state-dir', str(state)],
            check=True, capture_output=True, text=True,
            env={k: v for k, v in os.environ.items() if not k.startswith('HARNESS_')},
        ).stdout.strip()

    for url in serve(work, '--auth', 'jwt'):
        yield url, token


@pytest.fixture(scope='module')
def browser():
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM)
        yield b
        b.close()


def person(browser, harness: str, who: str, token: str | None = None) -> Page:
    """A signed-in inbox for `who` (with `token` where the harness verifies one), failing
    the test on any dialog or page error."""
    page = browser.new_context().new_page()
    page.on('dialog', lambda d: pytest.fail(f'a dialog opened: {d.message}'))
    page.on('pageerror', lambda e: pytest.fail(f'the page threw: {e}'))
    page.goto(f'{harness}/ui/')
    if token is None:
        page.get_by_label('Participant id').fill(who)
    else:
        page.get_by_label('Token').fill(token)
    page.get_by_role('button', name='Open my inbox').click()
    expect(page.locator('#whoami')).to_have_text(f'You are {who}')
    return page


def start_task(page: Page, name: str, goal: str, participants: str) -> None:
    page.get_by_role('button', name='New task').click()
    page.get_by_label('Name').fill(name)
    page.get_by_label('Goal').fill(goal)
    page.get_by_label('Acceptance criteria, one a line').fill('The shed is one colour')
    page.get_by_label('Participants, one a line', exact=False).fill(participants)
    page.get_by_role('button', name='Start').click()
    expect(page.locator('#detail-heading')).to_have_text(name, timeout=WAIT_MS)


def round_trip(alice: Page, bob: Page, artifacts: Path, prefix: str = '') -> None:
    """alice starts a task; the model asks bob; bob answers from his inbox; alice sees
    the task complete. A screenshot of each step, named with `prefix`."""
    shot = lambda page, name: page.screenshot(path=artifacts / f'{prefix}{name}.png')  # noqa: E731
    shot(bob, '1-bob-empty-inbox')

    start_task(alice, 'Paint the shed', 'Paint the garden shed', 'bob watcher')
    expect(alice.locator('#task-state')).to_have_text('State: input required', timeout=WAIT_MS)
    shot(alice, '2-alice-started')

    # bob's inbox shows it first, marked, with no reload.
    first = bob.locator('#task-list li').first
    expect(first).to_have_class('waiting', timeout=WAIT_MS)
    expect(first).to_contain_text('Paint the shed')
    expect(first).to_contain_text('Waiting on you')
    shot(bob, '3-bob-waiting-on-him')

    first.get_by_role('button').click()
    expect(bob.locator('#ask')).to_be_visible(timeout=WAIT_MS)
    expect(bob.locator('#ask-question')).to_contain_text(QUESTION)
    bob.get_by_label('Your answer').fill('Blue')
    shot(bob, '4-bob-answers')
    bob.get_by_role('button', name='Answer').click()

    # alice's open page follows the task to its end.
    expect(alice.locator('#task-state')).to_have_text('State: completed', timeout=WAIT_MS)
    expect(alice.locator('#conversation')).to_contain_text('Blue')
    expect(alice.locator('#conversation')).to_contain_text(ANSWER)
    shot(alice, '5-alice-sees-it-complete')
    expect(bob.locator('#ask')).to_be_hidden(timeout=WAIT_MS)


def test_alice_asks_through_the_model_and_bob_answers_in_his_inbox(browser, harness, artifacts):
    alice = person(browser, harness, 'alice')
    bob = person(browser, harness, 'bob')
    round_trip(alice, bob, artifacts)

    # `/` offers the commands the card lists.
    card = json.load(urllib.request.urlopen(f'{harness}/.well-known/agent-card.json'))
    ext = next(e for e in card['capabilities']['extensions'] if e['uri'].endswith('/commands/v1'))
    names = [c['name'] for c in ext['params']['commands']]
    assert names, card
    box = alice.get_by_label('Message (type / for commands)')
    box.fill('')
    box.press_sequentially('/')
    options = alice.get_by_role('option')
    expect(options).to_have_count(len(names))
    assert [o.split(' ')[0] for o in options.all_inner_texts()] == [f'/{n}' for n in names]
    alice.screenshot(path=artifacts / '6-commands.png')
    box.press('Enter')
    expect(box).to_have_value(f'/{names[0]} ')



def test_with_jwt_each_person_signs_in_with_a_token_kept_in_the_page_only(
        browser, jwt_harness, artifacts):
    url, token = jwt_harness
    alice_token, bob_token = token('alice'), token('bob')
    alice = person(browser, url, 'alice', alice_token)
    bob = person(browser, url, 'bob', bob_token)
    round_trip(alice, bob, artifacts, prefix='jwt-')
    for page in (alice, bob):
        held = page.evaluate('JSON.stringify([location.href, {...localStorage}, {...sessionStorage}])')
        assert alice_token not in held and bob_token not in held, held

    # alice's name under another key's signature: the page cannot tell, the harness can.
    other = Path(tempfile.mkdtemp(prefix='harness-ui-other-'))
    forged = token('alice', other)
    mallory = person(browser, url, 'alice', forged)
    expect(mallory.locator('#error')).to_contain_text('Unauthenticated', timeout=WAIT_MS)
    mallory.screenshot(path=artifacts / 'jwt-6-forged-token-refused.png')
    expect(mallory.locator('#task-list')).not_to_contain_text('Paint the shed')


def test_markup_from_a_task_renders_as_text_and_runs_nothing(browser, harness, artifacts):
    alice = person(browser, harness, 'alice')
    name = INJECTIONS[0]
    start_task(alice, name, '\n\n'.join(INJECTIONS[:-1]), 'bob watcher')
    box = alice.get_by_label('Message (type / for commands)')
    for text in INJECTIONS[1:]:
        box.fill(text)
        alice.get_by_role('button', name='Send').click()
        expect(alice.locator('#conversation')).to_contain_text(text[-200:], timeout=WAIT_MS)
    alice.screenshot(path=artifacts / '7-markup-as-text.png')

    expect(alice.locator('#detail-heading')).to_have_text(name)
    task = alice.locator('#task')
    for tag in ['img', 'script', 'svg', 'iframe']:
        expect(task.locator(tag)).to_have_count(0)
    hrefs = task.locator('a').evaluate_all('as => as.map(a => a.href)')
    assert not [h for h in hrefs if not h.startswith(('http:', 'https:', 'mailto:', 'blob:'))], hrefs
    assert alice.evaluate('window.__pwned') is None
    # And the list shows the name as text too.
    expect(alice.locator('#task-list')).to_contain_text(name)
    assert alice.locator('#task-list img').count() == 0


def test_a_draft_typed_while_a_message_is_on_its_way_stays(browser, harness):
    """The answer to a send can come after its message already shows (the task's stream
    is quicker): what the person typed by then is not wiped when it comes."""
    alice = person(browser, harness, 'alice')
    start_task(alice, 'Drafts', 'Keep my drafts', 'bob watcher')
    held = []

    def hold_sends(route):
        if 'SendMessage' in (route.request.post_data or ''):
            held.append(route)  # answered below, once the next draft is typed
        else:
            route.continue_()

    alice.route(f'{harness}/', hold_sends)
    box = alice.get_by_label('Message (type / for commands)')
    box.fill('first message')
    alice.get_by_role('button', name='Send').click()
    deadline = time.monotonic() + WAIT_MS / 1000
    while not held and time.monotonic() < deadline:
        alice.wait_for_timeout(50)
    assert held, 'the send never left the page'
    box.fill('a second thought')
    # The page reads the task again right after it handles the send's answer.
    with alice.expect_request(lambda r: 'GetTask' in (r.post_data or '')):
        held[0].continue_()
    expect(alice.locator('#conversation')).to_contain_text('first message', timeout=WAIT_MS)
    expect(box).to_have_value('a second thought')


def test_the_inbox_asks_for_what_it_shows_and_reads_a_burst_of_events_once(browser, harness):
    """Every GetTask of the open task names the history the page shows, and 20 events at
    once on its stream (a stand-in answers SubscribeToTask) read the task a few times, not
    once an event (before: 21 reads, each of the whole history)."""
    alice = person(browser, harness, 'alice')
    gets = []
    alice.on('request', lambda r: gets.append(json.loads(r.post_data))
             if 'GetTask' in (r.post_data or '') else None)
    burst = ''.join(
        f'data: {{"jsonrpc":"2.0","id":1,"result":{{"statusUpdate":{{"taskId":"{n}"}}}}}}\n\n'
        for n in range(20))
    served = []

    def twenty_events(route):
        if 'SubscribeToTask' in (route.request.post_data or ''):
            served.append(len(gets))
            route.fulfill(status=200, headers={'Content-Type': 'text/event-stream'}, body=burst)
        else:
            route.continue_()

    alice.route(f'{harness}/', twenty_events)
    start_task(alice, 'Bursts', 'Read me once a burst', 'bob watcher')
    expect(alice.locator('#detail-heading')).to_have_text('Bursts', timeout=WAIT_MS)
    deadline = time.monotonic() + WAIT_MS / 1000
    while not served and time.monotonic() < deadline:
        alice.wait_for_timeout(50)
    assert served, 'the page never subscribed'
    # Long enough for 20 reads one after another; the page reads the task again every
    # 2 s besides while it waits on bob.
    alice.wait_for_timeout(3000)
    after = len(gets) - served[0]
    assert after <= 6, f'{after} reads of the task for 20 events'
    opened = [g for g in gets if g['params'].get('historyLength') != 0]
    assert opened, 'the page read the open task'
    assert all(g['params'].get('historyLength') == 50 for g in opened), opened


def test_the_page_forbids_inline_script(harness):
    with urllib.request.urlopen(f'{harness}/ui/') as resp:
        policy = resp.headers['Content-Security-Policy']
    assert "script-src 'self'" in policy and 'unsafe-inline' not in policy, policy
    assert "default-src 'none'" in policy, policy


def test_the_answer_shows_as_it_streams_before_the_task_completes(
        browser, streaming_harness, artifacts):
    """The model writes its answer in 20 pieces 300 ms apart: the open task shows it
    growing while it is still working, as text (the markup in it makes no element), added
    to one text node rather than the task drawn again per piece, and at the end the
    stored answer once. Before, the answer showed only once the task had completed."""
    answer = ''.join(STREAMED)
    alice = person(browser, streaming_harness, 'alice')
    reads = []
    alice.on('request', lambda r: reads.append(time.monotonic())
             if 'GetTask' in (r.post_data or '') else None)
    start_task(alice, 'Stream the answer', 'Tell me how the shed gets painted', 'bob watcher')

    def seen() -> tuple[str, list[str]]:
        """The task's state line and its artifacts' texts, read at one moment."""
        return tuple(alice.evaluate("""() => [
            document.getElementById('task-state').textContent,
            [...document.querySelectorAll('#artifacts li .text')].map((t) => t.textContent),
        ]"""))

    def wait_for(ok, what: str) -> tuple[str, list[str]]:
        deadline = time.monotonic() + WAIT_MS / 1000
        while True:
            state, texts = seen()
            if ok(state, texts):
                return state, texts
            assert time.monotonic() < deadline, f'{what}: {state} {texts}'
            alice.wait_for_timeout(20)

    def partial(texts: list[str], longer_than: int = 0) -> bool:
        return (len(texts) == 1 and longer_than < len(texts[0]) < len(answer)
                and answer.startswith(texts[0]))

    state1, texts1 = wait_for(lambda st, t: partial(t) or st == 'State: completed',
                              'part of the answer shows')
    alice.screenshot(path=artifacts / '8-answer-streaming-1.png', full_page=True)
    assert state1 == 'State: working', (state1, texts1)
    assert partial(texts1), texts1
    # The piece shown is the one the next pieces are added to.
    alice.evaluate("document.querySelector('#artifacts li .text').dataset.marked = 'yes'")
    reads_before = len(reads)

    # At least three pieces more, while the task still works.
    more = len(texts1[0]) + 3 * len(STREAMED[1])
    state2, texts2 = wait_for(lambda st, t: partial(t, more) or st == 'State: completed',
                              'more of the answer shows')
    alice.screenshot(path=artifacts / '9-answer-streaming-2.png', full_page=True)
    assert state2 == 'State: working', (state2, texts2)
    assert partial(texts2, more) and texts2[0].startswith(texts1[0]), (texts1, texts2)
    assert alice.evaluate("document.querySelector('#artifacts li .text').dataset.marked") == 'yes'
    assert len(reads) - reads_before <= 1, 'the task is not read again for each piece'

    expect(alice.locator('#task-state')).to_have_text('State: completed', timeout=WAIT_MS)
    alice.screenshot(path=artifacts / '10-answer-complete.png', full_page=True)
    _, texts = seen()
    assert texts == [answer], texts
    conversation = alice.locator('#conversation').text_content()
    assert conversation.count(answer) == 1, conversation
    assert alice.locator('#task').text_content().count(STREAMED[0]) == 2, 'in the answer and the artifact'
    expect(alice.locator('#task img')).to_have_count(0)
    assert alice.evaluate('window.__pwned') is None


DEADLINES = {'turns': [
    {'tool_calls': [
        {'name': 'create_task_for_participant', 'arguments': {
            'participant_id': 'bob', 'name': 'Measure the shed', 'goal': 'Measure it',
            'reply_within': '1h'}},
        {'name': 'ask_participant', 'arguments': {
            'participant_id': 'bob', 'question': QUESTION, 'reply_within': '3h'}},
    ]},
    {'text': ANSWER},
]}


@pytest.fixture(scope='module')
def deadlines_harness():
    """A harness whose model gives bob a task due in an hour, then asks him a question
    due in three."""
    yield from serve(Path(tempfile.mkdtemp(prefix='harness-ui-due-')), script=DEADLINES)


def test_what_waits_on_me_shows_when_it_is_due_soonest_first(
        browser, deadlines_harness, artifacts):
    """bob's inbox lists what waits on him soonest due first (the task due in an hour
    before the newer question due in three), each with its due time, and the open
    question says by when it is to be answered. Before, the list was newest first and
    showed no due time."""
    alice = person(browser, deadlines_harness, 'alice')
    bob = person(browser, deadlines_harness, 'bob')
    start_task(alice, 'Paint the shed', 'Paint the garden shed', 'bob watcher')
    items = bob.locator('#task-list li.waiting')
    expect(items).to_have_count(2, timeout=WAIT_MS)
    expect(items.nth(0)).to_contain_text('Measure the shed')
    expect(items.nth(1)).to_contain_text('Paint the shed')
    dues = [bob.evaluate('(t) => Date.parse(t)', items.nth(i).locator('.due').text_content()
                         .removeprefix('Answer by ')) for i in range(2)]
    now_ms = time.time() * 1000
    # As the page's locale writes it (to the second): about 1 h and 3 h from now.
    assert abs(dues[0] - now_ms - 3_600_000) < 120_000, dues
    assert abs(dues[1] - now_ms - 10_800_000) < 120_000, dues
    bob.screenshot(path=artifacts / '11-bob-waiting-soonest-first.png', full_page=True)

    items.nth(1).get_by_role('button').click()
    expect(bob.locator('#ask-question')).to_contain_text(QUESTION, timeout=WAIT_MS)
    expect(bob.locator('#ask-due')).to_be_visible()
    expect(bob.locator('#ask-due')).to_have_text(items.nth(1).locator('.due').text_content())


class CuttingProxy:
    """A proxy in front of the harness that cuts the first SubscribeToTask stream after
    `keep` events, as a load balancer or a phone does; it records the `Last-Event-ID` of
    each SubscribeToTask it passes on, and the ids of the events it forwarded, by stream."""

    def __init__(self, upstream: str, keep: int):
        import http.client
        import http.server
        import threading
        import urllib.parse

        self.keep, self.cut, self.resumed_with, self.streams = keep, False, [], []
        target = urllib.parse.urlparse(upstream)
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.0'

            def log_message(self, *args):
                pass

            def do_GET(self):
                self.relay()

            def do_POST(self):
                self.relay()

            def relay(self):
                body = self.rfile.read(int(self.headers.get('Content-Length') or 0))
                up = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
                # The Host and Origin the page sent, as a proxy in front keeps them.
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ('connection', 'keep-alive')}
                up.request(self.command, self.path, body=body or None, headers=headers)
                res = up.getresponse()
                subscribe = b'SubscribeToTask' in body
                if subscribe:
                    proxy.resumed_with.append(self.headers.get('Last-Event-ID'))
                    forwarded = []
                    proxy.streams.append(forwarded)
                cut_this = subscribe and not proxy.cut
                self.send_response(res.status)
                for k, v in res.getheaders():
                    if k.lower() not in ('transfer-encoding', 'connection', 'content-length'):
                        self.send_header(k, v)
                self.end_headers()
                sent = 0
                buffer = b''
                while True:
                    chunk = res.read1(65536)
                    if not chunk:
                        break
                    if not subscribe:
                        self.wfile.write(chunk)
                        continue
                    buffer += chunk
                    while b'\n\n' in buffer:
                        event, buffer = buffer.split(b'\n\n', 1)
                        for line in event.split(b'\n'):
                            if line.startswith(b'id:'):
                                forwarded.append(line[3:].strip().decode())
                        self.wfile.write(event + b'\n\n')
                        self.wfile.flush()
                        sent += 1
                        if cut_this and sent >= proxy.keep:
                            proxy.cut = True
                            up.close()
                            return
                up.close()

        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.url = f'http://127.0.0.1:{self.server.server_address[1]}'
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


def test_a_cut_stream_resumes_where_it_stopped(browser, streaming_harness, artifacts):
    """The open task's stream is cut after its Task and three pieces of the answer, while
    the model is still writing: the page subscribes again with the id of the last event it
    got (`Last-Event-ID`), the answer goes on growing from where it was, and it ends as
    the stored answer, once, nothing missing and nothing twice."""
    proxy = CuttingProxy(streaming_harness, keep=4)
    try:
        answer = ''.join(STREAMED)
        alice = person(browser, proxy.url, 'alice')
        start_task(alice, 'Cut the stream', 'Tell me how the shed gets painted', 'bob watcher')
        deadline = time.monotonic() + WAIT_MS / 1000
        while len(proxy.resumed_with) < 2:
            assert time.monotonic() < deadline, proxy.resumed_with
            alice.wait_for_timeout(20)
        assert proxy.cut
        assert proxy.resumed_with[0] is None, proxy.resumed_with
        # The second stream asks for what came after the last event the first delivered.
        first, second = proxy.streams[0], proxy.streams[1]
        assert proxy.resumed_with[1] == first[-1], (proxy.resumed_with, first)
        text = alice.locator('#artifacts li .text')
        expect(text).to_have_count(1, timeout=WAIT_MS)
        alice.screenshot(path=artifacts / '12-stream-resumed.png', full_page=True)
        expect(alice.locator('#task-state')).to_have_text('State: completed', timeout=WAIT_MS)
        assert text.text_content() == answer
        assert alice.locator('#conversation').text_content().count(answer) == 1
        # The resumed stream's Task stands where the cut left the client (its id is the
        # cursor); the events after it follow the cut, in order, none twice.
        assert second[0] == first[-1], (first, second)
        ids = [int(i.split('.')[0]) for i in first + second[1:]]
        assert ids == sorted(set(ids)), (first, second)
    finally:
        proxy.close()
