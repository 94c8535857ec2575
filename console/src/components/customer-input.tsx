import { useEffect, useState } from 'preact/hooks';
import { listCustomers } from '../api/client.ts';

/** How many names the picker offers at once: the first ones by name that hold the text typed. */
const SUGGESTIONS = 20;
/** Waits this long after a key before asking, so that typing a name asks once, not once a letter. */
const DEBOUNCE_MS = 150;

/** What a form sets on the field besides its value: the same attributes it set on the plain input before. */
interface InputProps {
  name?: string;
  placeholder?: string;
  size?: number;
  disabled?: boolean;
  'aria-invalid'?: boolean;
  'aria-describedby'?: string;
}

/**
 * A text field for a customer's name that offers the names the session may name (GET
 * /api/v1/customers, searched as one types: a customer's session is offered its own only), and
 * says at once when what was typed names no customer, before a form is sent and refused as
 * "unknown customer". Empty text is never flagged: there it means "none" or "every customer".
 */
export function CustomerInput({ id, value, onValue, ...props }: { id: string; value: string; onValue: (value: string) => void } & InputProps) {
  const [names, setNames] = useState<string[]>([]);
  const [unknown, setUnknown] = useState(false);
  // Asks nothing until the field is used or its name changes: a page of many such fields (a row
  // each) loads without a request each, and a name the page was given (a record's own customer)
  // is not checked as if typed.
  const [used, setUsed] = useState(false);
  const [given] = useState(() => value.trim());
  const text = value.trim();
  useEffect(() => {
    if (!used && text === given) return undefined;
    let current = true;
    const timer = setTimeout(() => {
      listCustomers(text === '' ? undefined : text, SUGGESTIONS).then(
        (page) => {
          if (!current) return;
          const found = page.data.map((customer) => customer.name);
          setNames(found);
          setUnknown(text !== '' && !found.includes(text));
        },
        // Without the list the field is a plain text field, as before: the form's answer still names a wrong name.
        () => current && setUnknown(false),
      );
    }, DEBOUNCE_MS);
    return () => {
      current = false;
      clearTimeout(timer);
    };
  }, [text, used]);
  const listId = `${id}-customers`;
  const hintId = `${id}-unknown`;
  return (
    <>
      <input
        {...props}
        id={id}
        value={value}
        list={listId}
        autocomplete="off"
        aria-describedby={[props['aria-describedby'], unknown ? hintId : undefined].filter(Boolean).join(' ') || undefined}
        onFocus={() => setUsed(true)}
        onInput={(event) => onValue(event.currentTarget.value)}
      />
      <datalist id={listId} data-testid={listId}>
        {names.map((name) => (
          <option key={name} value={name} />
        ))}
      </datalist>
      {unknown && !props.disabled && (
        <p class="field-hint" id={hintId} role="status" data-testid={hintId}>
          No customer is named “{text}”{names.length > 0 ? <>: did you mean {names.slice(0, 3).map((name, index) => <>{index > 0 && ', '}<button type="button" class="small-button" onClick={() => onValue(name)}>{name}</button></>)}?</> : '.'}
        </p>
      )}
    </>
  );
}
