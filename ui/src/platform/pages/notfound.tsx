import { PageTitle } from "../../shared/components";
import { Link } from "../../shared/router";

export function NotFound() {
  return (
    <>
      <PageTitle title="Page not found" lead="There is no page at this address." />
      <p>
        <Link href="/documents">Go to your documents</Link>
      </p>
    </>
  );
}
