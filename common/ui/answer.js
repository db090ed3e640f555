// The answer page of a personal channel's link: the token is the URL's fragment (never
// sent to a server by the browser on its own), posted once with the answer.

const $ = (id) => document.getElementById(id);

function showError(text) {
  $('error').textContent = text;
  $('error').hidden = !text;
}

$('answer').addEventListener('submit', async (e) => {
  e.preventDefault();
  showError('');
  const token = location.hash.slice(1);
  if (!token) {
    showError('This page needs the link from your message, in full.');
    return;
  }
  try {
    const res = await fetch('answer', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ token, text: $('answer-text').value }),
    });
    const body = await res.json().catch(() => ({}));
    if (!res.ok) {
      showError(body.error || `The harness answered HTTP ${res.status}.`);
      return;
    }
    $('answer').hidden = true;
    $('done').hidden = false;
  } catch (err) {
    showError(`The harness could not be reached (${err.message}).`);
  }
});
